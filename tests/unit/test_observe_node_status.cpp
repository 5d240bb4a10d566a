// The node's snapshot survives its JSON whole (what `gangrun top` reads is
// what the agent collected), and a frame with a field missing or of the
// wrong kind is refused, not half read.
#include "observe/node_status.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace gangrun::observe;

namespace {

NodeStatus sample_status() {
  NodeStatus status;
  status.run_id = "job-7";
  status.node = "gpu-node-3";
  status.node_rank = 1;
  status.agent_state = "running";
  status.collected_at = 1700000000.5;
  status.rounds = 3;
  status.restarts = 2;
  status.nodes_in_round = 2;
  status.local_world_size = 2;
  status.hangs = 1;
  status.stragglers_named = 4;
  RankStatus hung;
  hung.rank = 2;
  hung.pid = 4242;
  hung.state = RankState::stopped;
  hung.cpu_seconds = 12.25;
  hung.rss_kib = 90000;
  hung.seconds_since_output = 31.5;
  hung.seconds_since_progress = 31.5;
  hung.hung = true;
  RankStatus slow;
  slow.rank = 3;
  slow.local_rank = 1;
  slow.pid = 4243;
  slow.state = RankState::running;
  slow.seconds_since_progress = 2;
  slow.steps_per_second = 0.5;
  slow.gpu_utilization = 97;
  slow.gpu_memory_bytes = 8ull << 30;
  slow.slow = true;
  status.ranks = {hung, slow};
  status.store = StoreStatus{};
  status.store->connections = 5;
  status.store->requests = 120;
  status.store->bytes_received = 9000;
  status.store->seconds_since_request = 0.25;
  return status;
}

}  // namespace

TEST_CASE("a node's snapshot reads back from its JSON field for field", "[observe]") {
  NodeStatus status = sample_status();
  auto back = node_status_from_json(nlohmann::json::parse(to_json(status).dump()));
  REQUIRE(back);
  CHECK(to_json(*back) == to_json(status));
  REQUIRE(back->ranks.size() == 2);
  CHECK(back->ranks[0].state == RankState::stopped);
  CHECK(back->ranks[0].hung);
  CHECK_FALSE(back->ranks[0].steps_per_second);
  CHECK(back->ranks[1].gpu_memory_bytes == (8ull << 30));
  REQUIRE(back->store);
  CHECK(back->store->seconds_since_request == 0.25);
}

TEST_CASE("a snapshot with no store and no ranks reads back", "[observe]") {
  NodeStatus status;
  status.run_id = "r";
  auto back = node_status_from_json(to_json(status));
  REQUIRE(back);
  CHECK_FALSE(back->store);
  CHECK(back->ranks.empty());
}

TEST_CASE("a snapshot missing a field, or with a field of the wrong kind, is refused",
          "[observe]") {
  nlohmann::json json = to_json(sample_status());
  json.erase("hangs");
  CHECK_FALSE(node_status_from_json(json));
  json = to_json(sample_status());
  json["ranks"][0]["state"] = "dancing";
  CHECK_FALSE(node_status_from_json(json));
  json = to_json(sample_status());
  json["ranks"][1]["pid"] = "not a number";
  CHECK_FALSE(node_status_from_json(json));
}
