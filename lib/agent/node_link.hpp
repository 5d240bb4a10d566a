// This node's link to the other nodes of a multi-node job (plan.multi_node):
// the coordinator, when this agent hosts the rendezvous' store, and its own
// participant, which joins, is told each round and the job's end, and
// reports how this node's workers did. The agent (agent/node_agent.cpp)
// gets each round ready made: its assignment, this node's name, the round
// as the gang doctor takes it, and the round's network variables.
// Single-threaded, on the agent's loop.
#pragma once

#include "agent/round_network.hpp"
#include "doctor/watch/gang_doctor.hpp"
#include "launch/plan.hpp"
#include "rendezvous/coordinator.hpp"
#include "rendezvous/participant.hpp"
#include "store/server.hpp"
#include "supervise/gang.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <string>

namespace gangrun::agent {

// A round this node takes part in.
struct AssignedRound {
  launch::RoundAssignment assignment;
  std::string node_name;  // this node as every message names it (RunRecord::node)
  doctor::GangDoctor::NodeRound nodes;
  EnvMap network_env;  // agent/round_network.hpp; empty: none set
};

// As rendezvous::ParticipantEvents says, but for round_assigned.
struct NodeLinkEvents {
  std::function<void(const AssignedRound& round)> round_assigned;
  std::function<void(const rendezvous::RoundEnd& end)> round_ending;
  std::function<void(const rendezvous::JobOutcome& outcome)> job_done;
  std::function<void(const Error& error)> store_lost;
  std::function<void(const Error& error)> refused;
};

// The round as the gang doctor takes it: every member and its name, whether
// this node leads (group rank 0), and the job's nonce.
doctor::GangDoctor::NodeRound node_round_for(const rendezvous::RoundPlan& round,
                                             const rendezvous::Member& me,
                                             const std::string& job_nonce);

// "round 2: ranks 4-7 of 8 (node 1 of 2)", and the workers' master address
// when it is not the one the round names (assignment_from's choice).
std::string round_assigned_message(const rendezvous::RoundPlan& round, const rendezvous::Member& me,
                                   const launch::RoundAssignment& assignment);

// How this node's gang doctor reaches the others' (doctor::DoctorLink).
doctor::DoctorLink::Settings doctor_link_settings(const launch::LaunchPlan& plan,
                                                  const std::string& agent_id);

// The rendezvous' store as log lines name it: the master address and port.
std::string rendezvous_endpoint(const launch::LaunchPlan& plan);

class NodeLink {
 public:
  // hosted: the store this agent hosts (host_rendezvous_store), which the
  // coordinator runs on; nullptr when another agent hosts it. It and io
  // outlive the link. Events run on io, from the participant's own
  // callbacks: a handler may leave() and must not touch the link after.
  NodeLink(boost::asio::io_context& io, const launch::LaunchPlan& plan, store::Server* hosted,
           NodeLinkEvents events);

  void join();
  // Closes this agent's connections: the coordinator counts it out. No
  // event comes afterwards.
  void leave();
  // Joined and not left yet.
  bool joined() const { return static_cast<bool>(participant_); }

  // Only while joined: this node's first failure so far, --on-hang's word
  // from the lead whose workers are done, and how the round ended here.
  void report_failure(const supervise::AttemptOutcome& so_far);
  void report_hang();
  void report_result(const supervise::AttemptOutcome& outcome, bool stopped_for_round_end);

  // done runs once every agent has read the job's outcome, when this agent
  // hosts the coordinator (the store stays up until then); at once otherwise.
  void when_everyone_answered(std::function<void()> done);

  const std::string& agent_id() const { return agent_id_; }

 private:
  void on_round_assigned(const rendezvous::RoundPlan& round, const rendezvous::Member& me);

  const launch::LaunchPlan& plan_;
  store::Server* hosted_;
  NodeLinkEvents events_;
  std::string agent_id_;
  int attempts_here_ = 0;  // rounds this node has run
  RoundNetwork round_network_;
  std::unique_ptr<rendezvous::Coordinator> coordinator_;
  std::unique_ptr<rendezvous::Participant> participant_;
};

}  // namespace gangrun::agent
