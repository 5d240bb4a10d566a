// What a round starts with on this node (agent/round_start.hpp): the gang's
// settings, and the launches with the doctor's and the network's
// variables, here started by a gang through the fake spawner.
#include "agent/round_start.hpp"
#include "fake_spawner.hpp"
#include "launch_test_support.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using gangrun::agent::gang_settings;
using gangrun::agent::round_launches;
using gangrun::agent::round_store_endpoint;
using gangrun::launch::LaunchPlan;
using gangrun::launch::RoundAssignment;
using gangrun::supervise::ExitStatus;
using gangrun::testing::FakeSpawner;

TEST_CASE("round start: the gang's timeouts, longer failure window on many nodes",
          "[agent][round]") {
  LaunchPlan plan;
  plan.term_timeout_s = 12;
  plan.failure_window_s = 2;
  plan.rendezvous.keep_alive_interval = 5;
  plan.rendezvous.keep_alive_max_attempt = 3;
  auto single = gang_settings(plan);
  CHECK(single.term_timeout == std::chrono::milliseconds(12000));
  CHECK(single.failure_window == std::chrono::milliseconds(2000));

  plan.multi_node = true;
  CHECK(gang_settings(plan).failure_window == std::chrono::milliseconds(17000));
  // No window: none is made on many nodes either.
  plan.failure_window_s = 0;
  CHECK(gang_settings(plan).failure_window == std::chrono::milliseconds(0));
}

TEST_CASE("round start: the store endpoint the gang doctor is told", "[agent][round]") {
  RoundAssignment round;
  round.master_addr = "10.0.0.1";
  CHECK(round_store_endpoint(round).empty());
  round.master_port = "29500";
  CHECK(round_store_endpoint(round) == "10.0.0.1:29500");
}

TEST_CASE(
    "round start: every worker gets the round's ranks, the doctor's and the network's "
    "variables",
    "[agent][round]") {
  auto plan = gangrun::launch::make_plan(gangrun::launch::test::job(2), {{"PATH", "/bin"}});
  REQUIRE(plan);
  RoundAssignment round = gangrun::launch::static_assignment(*plan, 1, "29500");
  round.rank_offset = 4;
  round.world_size = 6;
  gangrun::EnvMap doctor_env{{"TORCHELASTIC_TIMER_FILE", "/run/timer"}, {"SHARED", "doctor"}};
  gangrun::EnvMap network_env{{"NCCL_SOCKET_IFNAME", "eth1"}, {"SHARED", "network"}};
  auto launches = round_launches(*plan, round, "/tmp/run", doctor_env, network_env);

  // Started as the agent starts them: by a gang, here through the fake spawner.
  boost::asio::io_context io;
  gangrun::logmux::Console console;
  FakeSpawner spawner{io};
  spawner.after_start = [&](std::size_t index) { spawner.exit(index, ExitStatus::exited_with(0)); };
  gangrun::supervise::Gang gang(io, console, spawner, gang_settings(*plan));
  bool done = false;
  gang.start(std::move(launches), [&](const gangrun::supervise::AttemptOutcome& outcome) {
    CHECK(outcome.succeeded());
    done = true;
  });
  while (!done) REQUIRE(io.run_one_for(std::chrono::seconds(30)) > 0);

  REQUIRE(spawner.started() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& env = spawner.worker(i).spec.env;
    CHECK(env.at("RANK") == std::to_string(4 + i));
    CHECK(env.at("WORLD_SIZE") == "6");
    CHECK(env.at("TORCHELASTIC_RESTART_COUNT") == "1");
    CHECK(env.at("TORCHELASTIC_TIMER_FILE") == "/run/timer");
    CHECK(env.at("NCCL_SOCKET_IFNAME") == "eth1");
    CHECK(env.at("SHARED") == "network");  // the network's word is the last
    CHECK(env.at("PATH") == "/bin");
  }
}
