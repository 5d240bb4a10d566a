// The tools that start gangrun on other nodes (srun, ssh), supervised as a
// gang through the fake spawner (fake_spawner.hpp): no process is started.
// Each test turns the loop until the event it waits for, then makes the
// next one happen (a signal, a tool's exit).
#include "fake_spawner.hpp"
#include "remote/tool_start.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <csignal>
#include <functional>
#include <optional>

using Catch::Matchers::Contains;
using gangrun::remote::StopBy;
using gangrun::remote::ToolCommand;
using gangrun::remote::ToolGang;
using gangrun::remote::ToolRun;
using gangrun::remote::ToolsEnded;
using gangrun::supervise::ExitStatus;
using gangrun::testing::FakeSpawner;
using Journal = std::vector<std::string>;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

ToolRun srun_like() {
  return ToolRun{.stop_by = StopBy::signal_term,
                 .first_stdin_line = "",
                 .pass_user_signals = true,
                 .stop_rest_on_failure = false};
}

ToolRun ssh_like() {
  return ToolRun{.stop_by = StopBy::closing_stdin,
                 .first_stdin_line = "s3cret",
                 .pass_user_signals = false,
                 .stop_rest_on_failure = true};
}

Journal described(const std::vector<ExitStatus>& statuses) {
  Journal text;
  for (const ExitStatus& status : statuses) text.push_back(status.describe());
  return text;
}

struct Rig {
  explicit Rig(const ToolRun& how) : tools(io, spawner, how) {}

  // Starts `count` tools and turns the loop until every one is running.
  void start(std::size_t count) {
    std::vector<ToolCommand> commands;
    for (std::size_t i = 0; i < count; ++i) {
      commands.push_back(
          {.name = "tool " + std::to_string(i), .argv = {"/usr/bin/tool", std::to_string(i)}});
    }
    tools.start(commands, {{"PATH", "/usr/bin"}},
                [this](gangrun::Expected<ToolsEnded> result) { ended = std::move(result); });
    run_until([&] { return ended.has_value() || spawner.started() == count; });
    settle();
  }

  // Turns the loop until until() holds; fails the test if nothing happens
  // for k_event_limit. The loop may have run out of work (and stopped)
  // while the test waited to act.
  void run_until(const std::function<bool()>& until) {
    io.restart();
    while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
  }

  // Runs every handler that is ready, so that nothing is left to happen
  // until the test acts.
  void settle() {
    io.restart();
    io.poll();
    io.restart();
  }

  gangrun::Expected<ToolsEnded> finish() {
    run_until([&] { return ended.has_value(); });
    return std::move(*ended);
  }

  Journal entries(const std::string& prefix) const {
    Journal found;
    for (const std::string& line : spawner.journal) {
      if (line.rfind(prefix, 0) == 0) found.push_back(line);
    }
    return found;
  }

  bool stdin_closed(std::size_t index) { return spawner.stdin_of(index)->closed; }

  boost::asio::io_context io;
  FakeSpawner spawner{io};
  ToolGang tools;
  std::optional<gangrun::Expected<ToolsEnded>> ended;
};

}  // namespace

TEST_CASE("tools: srun gets SIGTERM for every stop signal, and its status comes back",
          "[remote][tools]") {
  Rig rig(srun_like());
  rig.start(1);
  CHECK_FALSE(rig.spawner.stdin_of(0));  // srun reads gangrun's own stdin
  CHECK(rig.spawner.worker(0).spec.argv == std::vector<std::string>{"/usr/bin/tool", "0"});
  rig.tools.on_signal(SIGINT);
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT"});
  CHECK(described(ended->statuses) == Journal{"signal 15 (SIGTERM)"});
  CHECK(ended->end_order == std::vector<std::size_t>{0});
  CHECK(rig.entries("end_tree") == Journal{"end_tree 0"});
}

TEST_CASE("tools: a second stop signal is SIGTERM again, never SIGKILL", "[remote][tools]") {
  Rig rig(srun_like());
  rig.spawner.workers_ignore_stop = true;
  rig.start(1);
  rig.tools.on_signal(SIGTERM);
  rig.tools.on_signal(SIGHUP);
  rig.settle();
  CHECK(rig.entries("signal") ==
        Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 0 SIGTERM", "signal 0 SIGCONT"});
  rig.spawner.exit(0, ExitStatus::exited_with(143));
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(ended->statuses.front().shell_code() == 143);
}

TEST_CASE("tools: USR1 and USR2 reach srun, and are not passed over ssh", "[remote][tools]") {
  SECTION("srun") {
    Rig rig(srun_like());
    rig.start(1);
    rig.tools.on_signal(SIGUSR1);
    rig.tools.on_signal(SIGUSR2);
    rig.settle();
    CHECK(rig.entries("signal") == Journal{"signal 0 SIGUSR1", "signal 0 SIGUSR2"});
    rig.spawner.exit(0, ExitStatus::exited_with(0));
    auto ended = rig.finish();
    REQUIRE(ended);
    CHECK(ended->statuses.front().success());
  }
  SECTION("ssh") {
    Rig rig(ssh_like());
    rig.start(2);
    rig.tools.on_signal(SIGUSR1);
    rig.settle();
    CHECK(rig.entries("signal").empty());
    CHECK_FALSE(rig.stdin_closed(0));
    rig.spawner.exit(0, ExitStatus::exited_with(0));
    rig.spawner.exit(1, ExitStatus::exited_with(0));
    auto ended = rig.finish();
    REQUIRE(ended);
    CHECK(described(ended->statuses) == Journal{"exit code 0", "exit code 0"});
  }
}

TEST_CASE("tools: ssh's first stdin line is the secret, and a stop closes stdin",
          "[remote][tools]") {
  Rig rig(ssh_like());
  rig.start(2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(rig.spawner.stdin_of(i)->text == "s3cret\n");
    CHECK_FALSE(rig.stdin_closed(i));
    CHECK(rig.spawner.worker(i).spec.argv ==
          std::vector<std::string>{"/usr/bin/tool", std::to_string(i)});
  }
  rig.tools.on_signal(SIGTERM);
  rig.settle();
  CHECK(rig.stdin_closed(0));
  CHECK(rig.stdin_closed(1));
  CHECK(rig.entries("signal").empty());  // no signal: ssh would not pass it on
  rig.spawner.exit(1, ExitStatus::exited_with(143));
  rig.spawner.exit(0, ExitStatus::exited_with(143));
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(ended->end_order == std::vector<std::size_t>{1, 0});
}

TEST_CASE("tools: a second stop signal while stopping by stdin sends SIGTERM to the tools",
          "[remote][tools]") {
  Rig rig(ssh_like());
  rig.start(2);
  rig.tools.on_signal(SIGINT);
  rig.settle();
  CHECK(rig.entries("signal").empty());
  rig.tools.on_signal(SIGINT);
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(rig.entries("signal") ==
        Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 1 SIGTERM", "signal 1 SIGCONT"});
  CHECK(described(ended->statuses) == Journal{"signal 15 (SIGTERM)", "signal 15 (SIGTERM)"});
}

TEST_CASE("tools: over ssh, one host failing stops the others by closing their stdin",
          "[remote][tools]") {
  Rig rig(ssh_like());
  rig.start(3);
  rig.spawner.exit(1, ExitStatus::exited_with(2));
  rig.run_until([&] { return rig.stdin_closed(0) && rig.stdin_closed(2); });
  CHECK(rig.entries("signal").empty());
  rig.spawner.exit(2, ExitStatus::exited_with(143));
  rig.spawner.exit(0, ExitStatus::exited_with(143));
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(ended->end_order == std::vector<std::size_t>{1, 2, 0});
  CHECK(described(ended->statuses) == Journal{"exit code 143", "exit code 2", "exit code 143"});
  // Each tool's tree goes with it, and strays after the last, as a gang's do.
  CHECK(rig.entries("end_tree").size() == 3);
  CHECK(rig.spawner.strays_killed == 1);
}

TEST_CASE("tools: without stop_rest_on_failure the others run on after a failure",
          "[remote][tools]") {
  Rig rig(srun_like());
  rig.start(2);
  rig.spawner.exit(0, ExitStatus::exited_with(1));
  rig.settle();
  CHECK(rig.entries("signal").empty());
  CHECK_FALSE(rig.ended);
  rig.spawner.exit(1, ExitStatus::exited_with(0));
  auto ended = rig.finish();
  REQUIRE(ended);
  CHECK(ended->end_order == std::vector<std::size_t>{0, 1});
  CHECK(described(ended->statuses) == Journal{"exit code 1", "exit code 0"});
}

TEST_CASE("tools: a tool that cannot start stops the others and is the error", "[remote][tools]") {
  Rig rig(srun_like());
  rig.spawner.fail_start_at = 1;
  std::vector<ToolCommand> commands = {{.name = "a", .argv = {"/usr/bin/a"}},
                                       {.name = "b", .argv = {"/usr/bin/b"}},
                                       {.name = "c", .argv = {"/usr/bin/c"}}};
  rig.tools.start(commands, {},
                  [&](gangrun::Expected<ToolsEnded> result) { rig.ended = std::move(result); });
  auto ended = rig.finish();
  REQUIRE_FALSE(ended);
  CHECK_THAT(ended.error().describe(), Contains("Too many open files"));
  CHECK(rig.spawner.started() == 1);  // c never started
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT"});
}
