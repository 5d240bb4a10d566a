#include "agent/node_link.hpp"

#include "agent/rendezvous_setup.hpp"
#include "launch/network_interface.hpp"
#include "util/host.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gangrun::agent {

doctor::GangDoctor::NodeRound node_round_for(const rendezvous::RoundPlan& round,
                                             const rendezvous::Member& me,
                                             const std::string& job_nonce) {
  doctor::GangDoctor::NodeRound nodes{.round = round.round,
                                      .members = {},
                                      .node_count = round.nodes,
                                      .names = {},
                                      .lead = me.group_rank == 0,
                                      .job_nonce = job_nonce};
  for (const rendezvous::Member& member : round.members) {
    nodes.members.push_back(member.id);
    nodes.names.emplace(member.id, rendezvous::node_name(member));
  }
  return nodes;
}

std::string round_assigned_message(const rendezvous::RoundPlan& round, const rendezvous::Member& me,
                                   const launch::RoundAssignment& assignment) {
  return fmt::format("round {}: ranks {}-{} of {} (node {} of {}){}", round.round, me.rank_offset,
                     me.rank_offset + me.local_world_size - 1, round.world_size, me.group_rank,
                     round.nodes,
                     assignment.master_addr == round.master_addr
                         ? ""
                         : fmt::format("; MASTER_ADDR={} ({}, as this node reached it)",
                                       assignment.master_addr, round.master_addr));
}

doctor::DoctorLink::Settings doctor_link_settings(const launch::LaunchPlan& plan,
                                                  const std::string& agent_id) {
  return {.store = agent_store_client(plan),
          .secret = plan.job_secret,
          .run_id = plan.run_id,
          .agent_id = agent_id};
}

std::string rendezvous_endpoint(const launch::LaunchPlan& plan) {
  return host::endpoint_text(plan.master_addr,
                             plan.master_port ? std::to_string(*plan.master_port) : "");
}

NodeLink::NodeLink(boost::asio::io_context& io, const launch::LaunchPlan& plan,
                   store::Server* hosted, NodeLinkEvents events)
    : plan_(plan), hosted_(hosted), events_(std::move(events)) {
  rendezvous::ParticipantSettings settings = participant_settings(plan_);
  agent_id_ = settings.me.id;
  if (!plan_.job_secret) {
    spdlog::warn(
        "the rendezvous is not authenticated: anyone who can reach {} can join, end or "
        "steer this job; give every node the same GANGRUN_JOB_SECRET (or "
        "GANGRUN_JOB_SECRET_FILE) to close it",
        rendezvous_endpoint(plan_));
  }
  if (hosted_) {
    coordinator_ = std::make_unique<rendezvous::Coordinator>(
        io, *hosted_, coordinator_settings(plan_, agent_id_));
  }
  // Each handler may end the participant inside its own callback: none
  // touches the link after the agent's handler.
  participant_ = std::make_unique<rendezvous::Participant>(
      io, std::move(settings),
      rendezvous::ParticipantEvents{
          .round_assigned = [this](const rendezvous::RoundPlan& round,
                                   const rendezvous::Member& me) { on_round_assigned(round, me); },
          .round_ending = [this](const rendezvous::RoundEnd& end) { events_.round_ending(end); },
          .job_done = [this](const rendezvous::JobOutcome& outcome) { events_.job_done(outcome); },
          .store_lost = [this](const Error& error) { events_.store_lost(error); },
          .refused = [this](const Error& error) { events_.refused(error); }});
}

void NodeLink::on_round_assigned(const rendezvous::RoundPlan& round, const rendezvous::Member& me) {
  AssignedRound assigned{
      .assignment = assignment_from(round, me, attempts_here_++, participant_->store_connection()),
      .node_name = rendezvous::node_name(me),
      .nodes = node_round_for(round, me, participant_->job_nonce()),
      .network_env = {}};
  spdlog::info("{}", round_assigned_message(round, me, assigned.assignment));
  assigned.network_env = round_network_.decide(
      plan_, round.round, participant_->store_connection(), launch::list_network_interfaces(),
      hosted_ ? hosted_->address_reached_from_outside() : std::nullopt);
  events_.round_assigned(assigned);
}

void NodeLink::join() { participant_->join(); }

void NodeLink::leave() { participant_.reset(); }

void NodeLink::report_failure(const supervise::AttemptOutcome& so_far) {
  participant_->report_failure(failure_report(participant_->me(), so_far));
}

void NodeLink::report_hang() { participant_->report_failure(hang_report(participant_->me())); }

void NodeLink::report_result(const supervise::AttemptOutcome& outcome, bool stopped_for_round_end) {
  participant_->report_result(round_report(participant_->me(), outcome, stopped_for_round_end));
}

void NodeLink::when_everyone_answered(std::function<void()> done) {
  if (!coordinator_) return done();
  coordinator_->when_everyone_answered(std::move(done));
}

}  // namespace gangrun::agent
