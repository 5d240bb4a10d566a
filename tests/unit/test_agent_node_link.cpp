// This node's link to the others (agent/node_link.hpp): a round made ready
// for the agent and the gang doctor, and how the link names the store.
#include "agent/node_link.hpp"

#include <catch2/catch.hpp>

using gangrun::agent::doctor_link_settings;
using gangrun::agent::node_round_for;
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
  round.world_size = 4;
  round.master_addr = "node1";
  round.master_port = "29500";
  return round;
}

}  // namespace

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
