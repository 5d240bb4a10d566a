#include "agent/agent_store.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using gangrun::ErrorCode;
using gangrun::agent::agent_store_bind_host;
using gangrun::agent::start_agent_store;
using gangrun::launch::LaunchPlan;

namespace {

LaunchPlan plan_for(int nnodes, std::optional<int> port) {
  LaunchPlan plan;
  plan.nnodes = nnodes;
  plan.master_addr = "127.0.0.1";
  plan.master_port = port;
  return plan;
}

}  // namespace

TEST_CASE("the agent store listens on the address given: loopback stays loopback",
          "[launch][store]") {
  CHECK(agent_store_bind_host(plan_for(1, std::nullopt)) == "127.0.0.1");
  auto several = plan_for(2, 29500);
  several.multi_node = true;
  several.host = "node0";
  CHECK(agent_store_bind_host(several) == "127.0.0.1");
  several.master_addr = "localhost";
  CHECK(agent_store_bind_host(several) == "localhost");
  several.master_addr = "10.1.2.3";
  CHECK(agent_store_bind_host(several) == "10.1.2.3");
  // --local_addr: the address this node is reached at, and listens on.
  several.local_addr = "fd00::1";
  CHECK(agent_store_bind_host(several) == "fd00::1");
}

TEST_CASE("the agent store takes a free port unless one is given", "[launch][store]") {
  boost::asio::io_context io;
  auto first = start_agent_store(io, plan_for(1, std::nullopt));
  REQUIRE(first);
  int port = (*first)->port();
  CHECK(port > 0);

  SECTION("another store gets another free port") {
    auto second = start_agent_store(io, plan_for(1, std::nullopt));
    REQUIRE(second);
    CHECK((*second)->port() != port);
  }
  SECTION("a taken port is a store error that names it and says what to do") {
    auto clash = start_agent_store(io, plan_for(1, port));
    REQUIRE_FALSE(clash);
    CHECK(clash.error().code() == ErrorCode::store);
    CHECK_THAT(clash.error().message(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
    CHECK_THAT(clash.error().message(), Catch::Contains("--master_port"));
  }
}

TEST_CASE("the agent store holds twice a big job's own connections", "[launch][store]") {
  using gangrun::agent::default_max_connections;
  using gangrun::agent::job_store_connections;
  auto job = [](int nnodes, int ranks) {
    LaunchPlan plan = plan_for(nnodes, 29500);
    plan.multi_node = nnodes > 1;
    plan.local_world_size = ranks;
    return plan;
  };
  // Four per agent, two per rank.
  CHECK(job_store_connections(job(2, 8)) == 2 * (4 + 16));
  CHECK(job_store_connections(job(4096, 1)) == 4096 * 6);
  // A small job keeps the store's own default; from 1,366 nodes of one rank,
  // and 410 of eight, the job's own connections would pass it.
  CHECK(default_max_connections(job(1, 1)) == 16 * 1024);
  CHECK(default_max_connections(job(1365, 1)) == 16 * 1024);
  CHECK(default_max_connections(job(1366, 1)) == 2 * 1366 * 6);
  CHECK(default_max_connections(job(409, 8)) == 16 * 1024);
  CHECK(default_max_connections(job(410, 8)) == 2 * 410 * 20);
  CHECK(default_max_connections(job(4096, 8)) == 2 * 4096 * 20);
}
