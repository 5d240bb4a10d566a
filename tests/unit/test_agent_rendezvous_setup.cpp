#include "agent/rendezvous_setup.hpp"

#include <catch2/catch.hpp>

using gangrun::agent::assignment_from;
using gangrun::rendezvous::RoundPlan;
using gangrun::store::AsyncClient;

namespace {

RoundPlan round_of_two() {
  RoundPlan round;
  round.round = 3;
  round.restart_count = 1;
  round.members = {
      {.id = "a", .host = "node1", .group_rank = 0, .rank_offset = 0, .local_world_size = 2},
      {.id = "b", .host = "node2", .group_rank = 1, .rank_offset = 2, .local_world_size = 2}};
  round.nodes = 2;
  round.world_size = 4;
  round.master_addr = "node1";
  round.master_port = "29500";
  return round;
}

}  // namespace

TEST_CASE("a round's workers meet at the store's address as this agent reached it",
          "[rendezvous]") {
  RoundPlan round = round_of_two();
  auto assignment =
      assignment_from(round, round.members[1], 7,
                      AsyncClient::Ends{.local_address = "10.0.0.2", .store_address = "10.0.0.1"});
  CHECK(assignment.master_addr == "10.0.0.1");
  CHECK(assignment.master_port == "29500");
  CHECK(assignment.group_rank == 1);
  CHECK(assignment.rank_offset == 2);
  CHECK(assignment.world_size == 4);
  CHECK(assignment.group_world_size == 2);
  CHECK(assignment.restart_count == 1);
  CHECK(assignment.attempt == 7);

  SECTION("IPv6, bare") {
    auto v6 =
        assignment_from(round, round.members[0], 0,
                        AsyncClient::Ends{.local_address = "fd00::2", .store_address = "fd00::1"});
    CHECK(v6.master_addr == "fd00::1");
  }
  SECTION("a connection not known: the name the round gives") {
    CHECK(assignment_from(round, round.members[0], 0, std::nullopt).master_addr == "node1");
  }
}
