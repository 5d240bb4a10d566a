#include "launch/plan.hpp"
#include "launch_test_support.hpp"

#include <catch2/catch.hpp>

using gangrun::config::Options;
using gangrun::config::ProcCount;
using gangrun::launch::place_workers;
using gangrun::launch::test::job;

TEST_CASE("launch::place_workers counts workers; without devices none gets a mask", "[launch]") {
  auto placed = place_workers(job(3), std::nullopt);
  REQUIRE(placed);
  CHECK(placed->workers == 3);
  REQUIRE(placed->device_envs.size() == 3);
  CHECK(placed->device_envs[2].empty());

  Options options;
  options.num_processes = 8;
  options.nnodes = 2;
  placed = place_workers(options, std::nullopt);
  REQUIRE(placed);
  CHECK(placed->workers == 4);

  options.nproc_per_node = ProcCount{ProcCount::Kind::gpu, 0};
  CHECK_FALSE(place_workers(options, std::nullopt));  // no device was probed
}
