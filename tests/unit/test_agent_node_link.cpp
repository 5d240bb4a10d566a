// This node's link to the others (agent/node_link.hpp): a round made ready
// for the agent and the gang doctor, and how the link names the store.
#include "agent/node_link.hpp"
#include "agent/rendezvous_setup.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include <functional>
#include <optional>

using gangrun::agent::AssignedRound;
using gangrun::agent::doctor_link_settings;
using gangrun::agent::node_round_for;
using gangrun::agent::NodeLink;
using gangrun::agent::NodeLinkEvents;
using gangrun::agent::rendezvous_endpoint;
using gangrun::agent::round_assigned_message;
using gangrun::launch::RoundAssignment;
using gangrun::rendezvous::RoundPlan;

namespace {

RoundPlan round_of_two() {
  RoundPlan round;
  round.round = 3;
  round.restart_count = 1;
  round.members = {{.id = "a",
                    .host = "node1",
                    .address = "10.0.0.1",
                    .group_rank = 0,
                    .rank_offset = 0,
                    .local_world_size = 2},
                   {.id = "b",
                    .host = "node2",
                    .address = "10.0.0.2",
                    .group_rank = 1,
                    .rank_offset = 2,
                    .local_world_size = 2}};
  round.nodes = 2;
  round.world_size = 4;
  round.master_addr = "node1";
  round.master_port = "29500";
  return round;
}

// A port nothing listens on now, on loopback.
int free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

// A static job of one node with one worker, whose agent hosts the store.
gangrun::launch::LaunchPlan one_node_job() {
  gangrun::launch::LaunchPlan plan;
  plan.multi_node = true;
  plan.host = "vm";
  plan.run_id = "run-7";
  plan.master_addr = "127.0.0.1";
  plan.master_port = free_port();
  plan.job_secret = "secret";
  return plan;
}

}  // namespace

TEST_CASE("node link: one node meets itself through the store it hosts, and the job ends",
          "[agent][link]") {
  boost::asio::io_context io;
  // The port was free a moment ago; another process may take it before the
  // store binds it, so a few tries, each with a port free then.
  auto plan = one_node_job();
  auto hosted = gangrun::agent::host_rendezvous_store(io, plan);
  for (int tries = 1; !hosted && tries < 5; ++tries) {
    plan = one_node_job();
    hosted = gangrun::agent::host_rendezvous_store(io, plan);
  }
  REQUIRE(hosted);
  REQUIRE(*hosted);
  std::optional<AssignedRound> assigned;
  std::optional<gangrun::rendezvous::JobOutcome> outcome;
  std::optional<NodeLink> link;
  link.emplace(
      io, plan, hosted->get(),
      NodeLinkEvents{.round_assigned = [&](const AssignedRound& round) { assigned = round; },
                     .round_ending = [](const gangrun::rendezvous::RoundEnd&) {},
                     .job_done =
                         [&](const gangrun::rendezvous::JobOutcome& done) {
                           outcome = done;
                           link->leave();  // inside the participant's own callback
                         },
                     .store_lost = [](const gangrun::Error& error) { FAIL(error.message()); },
                     .refused = [](const gangrun::Error& error) { FAIL(error.message()); }});
  auto run_until = [&](const std::function<bool()>& until) {
    while (!until()) REQUIRE(io.run_one_for(std::chrono::seconds(30)) > 0);
  };
  link->join();
  run_until([&] { return assigned.has_value(); });
  CHECK(link->joined());
  CHECK(assigned->assignment.attempt == 0);
  CHECK(assigned->assignment.rank_offset == 0);
  CHECK(assigned->assignment.world_size == 1);
  CHECK(assigned->assignment.master_port == std::to_string(*plan.master_port));
  CHECK(assigned->nodes.lead);
  CHECK(assigned->nodes.members == std::vector<std::string>{link->agent_id()});
  CHECK(assigned->node_name == assigned->nodes.names.at(link->agent_id()));

  gangrun::supervise::AttemptOutcome success;
  success.workers = {gangrun::supervise::WorkerOutcome{
      .rank = 0, .status = gangrun::supervise::ExitStatus::exited_with(0)}};
  link->report_result(success, false);
  run_until([&] { return outcome.has_value(); });
  CHECK(outcome->exit_code == 0);
  CHECK_FALSE(link->joined());
  bool answered = false;
  link->when_everyone_answered([&] { answered = true; });
  run_until([&] { return answered; });
}

TEST_CASE("node link: the round as the gang doctor takes it", "[agent][link]") {
  RoundPlan round = round_of_two();
  auto lead = node_round_for(round, round.members[0], "nonce");
  CHECK(lead.round == 3);
  CHECK(lead.lead);
  CHECK(lead.job_nonce == "nonce");
  CHECK(lead.members == std::vector<std::string>{"a", "b"});
  CHECK(lead.names.at("a") == gangrun::rendezvous::node_name(round.members[0]));
  CHECK(lead.names.at("b") == gangrun::rendezvous::node_name(round.members[1]));
  CHECK_FALSE(node_round_for(round, round.members[1], "nonce").lead);
}

TEST_CASE("node link: the log line of an assigned round", "[agent][link]") {
  RoundPlan round = round_of_two();
  RoundAssignment as_named;
  as_named.master_addr = "node1";
  CHECK(round_assigned_message(round, round.members[1], as_named) ==
        "round 3: ranks 2-3 of 4 (node 1 of 2)");
  RoundAssignment as_reached;
  as_reached.master_addr = "10.0.0.1";
  CHECK(round_assigned_message(round, round.members[1], as_reached) ==
        "round 3: ranks 2-3 of 4 (node 1 of 2); MASTER_ADDR=10.0.0.1 (node1, as this node "
        "reached it)");
}

TEST_CASE("node link: the store as messages and the doctor name it", "[agent][link]") {
  gangrun::launch::LaunchPlan plan;
  plan.multi_node = true;
  plan.master_addr = "10.0.0.1";
  plan.master_port = 29400;
  plan.run_id = "run-7";
  plan.job_secret = "secret";
  CHECK(rendezvous_endpoint(plan) == "10.0.0.1:29400");
  auto settings = doctor_link_settings(plan, "agent-a");
  CHECK(settings.store.host == "10.0.0.1");
  CHECK(settings.store.port == 29400);
  CHECK(settings.secret == "secret");
  CHECK(settings.run_id == "run-7");
  CHECK(settings.agent_id == "agent-a");
}
