// The node agent's restart policy and state changes, with the gang's
// workers played by the fake spawner (fake_spawner.hpp): real store, real
// run directory, no worker process.
#include "agent/node_agent.hpp"
#include "fake_spawner.hpp"
#include "util/exit_codes.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

using gangrun::agent::RunResult;
using gangrun::config::Options;
using gangrun::config::ProcCount;
using gangrun::supervise::ExitStatus;
using gangrun::testing::FakeSpawner;

namespace {

// A scratch directory for the run's files and report, removed afterwards.
struct Scratch {
  Scratch() {
    std::string pattern = (std::filesystem::temp_directory_path() / "agent-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~Scratch() { std::filesystem::remove_all(path); }
  std::string path;
};

gangrun::launch::LaunchPlan plan_for(int workers, int max_restarts, const Scratch& scratch) {
  Options options;
  options.nproc_per_node = ProcCount{ProcCount::Kind::number, workers};
  options.max_restarts = max_restarts;
  options.program_and_args = {"/bin/true"};
  options.report = scratch.path + "/report.json";
  options.output = gangrun::config::OutputMode::inherit;
  auto plan = gangrun::launch::make_plan(options, {{"PATH", "/bin"}, {"TMPDIR", scratch.path}});
  REQUIRE(plan);
  return *plan;
}

nlohmann::json read_report(const Scratch& scratch) {
  std::ifstream in(scratch.path + "/report.json");
  return nlohmann::json::parse(in);
}

using Workers = std::vector<std::shared_ptr<const FakeSpawner::Worker>>;

// Runs the agent with a fake spawner (owned by the agent, gone when it
// returns); `behave` decides, as each worker starts, what it does (by
// launch index, counted over every round). `started` gets every worker.
RunResult run_agent(const gangrun::launch::LaunchPlan& plan,
                    std::function<void(FakeSpawner&, std::size_t)> behave, Workers& started) {
  return gangrun::agent::run(plan, [&](boost::asio::io_context& io) {
    auto spawner = std::make_unique<FakeSpawner>(io);
    FakeSpawner* raw = spawner.get();
    raw->after_start = [raw, behave, &started](std::size_t index) {
      started.push_back(raw->shared_worker(index));
      behave(*raw, index);
    };
    return spawner;
  });
}

std::string env_of(const Workers& workers, std::size_t index, const std::string& name) {
  return workers.at(index)->spec.env.at(name);
}

}  // namespace

TEST_CASE("agent: a failed round is restarted until one succeeds", "[agent]") {
  Scratch scratch;
  auto plan = plan_for(2, 3, scratch);
  Workers spawner;
  // Rounds 0 and 1: local rank 1 fails. Round 2: every worker succeeds.
  RunResult result = run_agent(
      plan,
      [](FakeSpawner& fake, std::size_t index) {
        bool fails = index == 1 || index == 3;
        fake.exit(index, ExitStatus::exited_with(fails ? 7 : 0));
      },
      spawner);
  CHECK(result.exit_code == 0);
  CHECK_FALSE(result.die_by_signal);
  REQUIRE(spawner.size() == 6);
  // Every round gets its own assignment: the restart count moves on, and
  // the store stays at the same address.
  CHECK(env_of(spawner, 0, "TORCHELASTIC_RESTART_COUNT") == "0");
  CHECK(env_of(spawner, 2, "TORCHELASTIC_RESTART_COUNT") == "1");
  CHECK(env_of(spawner, 5, "TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(env_of(spawner, 5, "RANK") == "1");
  CHECK(env_of(spawner, 0, "MASTER_PORT") == env_of(spawner, 5, "MASTER_PORT"));
  nlohmann::json report = read_report(scratch);
  REQUIRE(report.at("attempts").size() == 3);
  CHECK(report.at("exit_code") == 0);
}

TEST_CASE("agent: the run ends with the root cause's code when no restart is left", "[agent]") {
  Scratch scratch;
  auto plan = plan_for(2, 1, scratch);
  Workers spawner;
  RunResult result = run_agent(
      plan,
      [](FakeSpawner& fake, std::size_t index) {
        if (index % 2 == 0) fake.exit(index, ExitStatus::exited_with(3));
      },
      spawner);
  CHECK(result.exit_code == 3);
  CHECK(spawner.size() <= 4);  // one restart; a round may stop before its second spawn
  nlohmann::json report = read_report(scratch);
  CHECK(report.at("attempts").size() == 2);
}

TEST_CASE("agent: a teardown signal stops the run and is re-raised, without a restart", "[agent]") {
  Scratch scratch;
  auto plan = plan_for(3, 5, scratch);
  Workers spawner;
  // The signal comes from outside once the last worker has started.
  RunResult result = run_agent(
      plan,
      [](FakeSpawner&, std::size_t index) {
        if (index == 2) ::kill(::getpid(), SIGTERM);
      },
      spawner);
  CHECK(result.die_by_signal == SIGTERM);
  CHECK(result.exit_code == gangrun::exit_codes::for_signal(SIGTERM));
  CHECK(spawner.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(spawner[i]->signals.front() == SIGTERM);
  CHECK(read_report(scratch).at("attempts").size() == 1);
}

TEST_CASE("agent: a report asked for and not written turns a success into a failure", "[agent]") {
  Scratch scratch;
  auto plan = plan_for(2, 0, scratch);
  std::ofstream(scratch.path + "/file") << "";
  plan.report_path = scratch.path + "/file/report.json";  // under a file: never written
  Workers spawner;
  RunResult result = run_agent(
      plan,
      [](FakeSpawner& fake, std::size_t index) { fake.exit(index, ExitStatus::exited_with(0)); },
      spawner);
  CHECK(result.exit_code == gangrun::exit_codes::k_system_failure);
  CHECK(spawner.size() == 2);
}

TEST_CASE("agent: a worker's failure keeps its code when the report cannot be written", "[agent]") {
  Scratch scratch;
  auto plan = plan_for(2, 0, scratch);
  std::ofstream(scratch.path + "/file") << "";
  plan.report_path = scratch.path + "/file/report.json";
  Workers spawner;
  RunResult result = run_agent(
      plan,
      [](FakeSpawner& fake, std::size_t index) {
        fake.exit(index, ExitStatus::exited_with(index == 0 ? 4 : 0));
      },
      spawner);
  CHECK(result.exit_code == 4);
}
