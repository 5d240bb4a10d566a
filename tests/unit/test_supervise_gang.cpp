// The gang's decisions, through the fake spawner (fake_spawner.hpp): no
// process is started. Each test drives the io_context until the event it
// waits for; the gang's own timers are the only clock.
#include "fake_spawner.hpp"
#include "supervise/gang.hpp"
#include "util/exit_codes.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <functional>
#include <optional>

using Catch::Matchers::Contains;
using gangrun::supervise::AttemptOutcome;
using gangrun::supervise::ExitStatus;
using gangrun::supervise::Gang;
using gangrun::supervise::GangSettings;
using gangrun::supervise::WorkerLaunch;
using gangrun::testing::FakeSpawner;
using Journal = std::vector<std::string>;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

GangSettings patient() {
  GangSettings settings;
  settings.term_timeout = std::chrono::minutes(10);  // never reached unless a test means to
  settings.supervisor_limit = std::chrono::minutes(10);
  return settings;
}

std::vector<WorkerLaunch> launches(int count) {
  std::vector<WorkerLaunch> result(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    result[static_cast<std::size_t>(i)].rank = 10 + i;
    result[static_cast<std::size_t>(i)].local_rank = i;
    result[static_cast<std::size_t>(i)].spawn.executable = "/opt/train";
  }
  return result;
}

struct Rig {
  explicit Rig(GangSettings settings = patient()) : gang(io, console, spawner, settings) {}

  void start(int workers) {
    outcome.reset();
    gang.start(launches(workers), [this](AttemptOutcome done) { outcome = std::move(done); });
  }

  // Turns the loop until until() holds; fails the test if nothing happens
  // for k_event_limit.
  void run_until(const std::function<bool()>& until) {
    while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
  }

  AttemptOutcome finish() {
    run_until([&] { return outcome.has_value(); });
    return std::move(*outcome);
  }

  // The journal lines that start with prefix, in order.
  Journal entries(const std::string& prefix) const {
    Journal found;
    for (const std::string& line : spawner.journal) {
      if (line.rfind(prefix, 0) == 0) found.push_back(line);
    }
    return found;
  }

  boost::asio::io_context io;
  gangrun::logmux::Console console;
  FakeSpawner spawner{io};
  Gang gang;
  std::optional<AttemptOutcome> outcome;
};

}  // namespace

TEST_CASE("gang: workers that all succeed end the attempt cleanly", "[supervise][gang]") {
  Rig rig;
  rig.start(3);
  rig.run_until([&] { return rig.spawner.started() == 3; });
  for (std::size_t i = 0; i < 3; ++i) rig.spawner.exit(i, ExitStatus::exited_with(0));
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.succeeded());
  CHECK_FALSE(outcome.root_cause);
  REQUIRE(outcome.workers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(outcome.workers[i].rank == 10 + static_cast<int>(i));
    CHECK(outcome.workers[i].pid == 1000 + static_cast<int>(i));
    CHECK(outcome.workers[i].started);
    CHECK_FALSE(outcome.workers[i].stopped_by_gangrun);
  }
  CHECK(rig.entries("signal").empty());
  // Every tree is ended once every worker has, then strays are collected.
  CHECK(rig.entries("end_tree") == Journal{"end_tree 0", "end_tree 1", "end_tree 2"});
  CHECK(rig.spawner.journal.back() == "kill_strays");
  CHECK_FALSE(rig.gang.running());
}

TEST_CASE("gang: the first worker to fail is the root cause; the others are stopped",
          "[supervise][gang]") {
  Rig rig;
  rig.start(4);
  rig.run_until([&] { return rig.spawner.started() == 4; });
  // Two failures reach the loop together: the first one handled is the
  // root cause, the second is a worker being stopped.
  rig.spawner.exit(2, ExitStatus::exited_with(3));
  rig.spawner.exit(0, ExitStatus::exited_with(1));
  AttemptOutcome outcome = rig.finish();
  REQUIRE(outcome.root_cause == 2u);
  CHECK(outcome.workers[2].status.code == 3);
  CHECK_FALSE(outcome.workers[2].stopped_by_gangrun);
  CHECK(outcome.workers[0].stopped_by_gangrun);
  CHECK(outcome.workers[1].stopped_by_gangrun);
  CHECK(outcome.workers[3].stopped_by_gangrun);
  CHECK(outcome.workers[1].status.signal == SIGTERM);
  CHECK(outcome.teardown_latency_ms);
  // The root cause is never signalled; worker 0's exit crossed the stop.
  // SIGCONT follows each stop signal, for a worker stopped from outside.
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 1 SIGTERM",
                                         "signal 1 SIGCONT", "signal 3 SIGTERM",
                                         "signal 3 SIGCONT"});
  CHECK_FALSE(outcome.stopped_by_signal);
}

TEST_CASE("gang: workers that ignore the stop signal get SIGKILL after term_timeout",
          "[supervise][gang]") {
  GangSettings settings = patient();
  settings.term_timeout = std::chrono::milliseconds(20);
  Rig rig(settings);
  rig.spawner.workers_ignore_stop = true;
  rig.start(3);
  rig.run_until([&] { return rig.spawner.started() == 3; });
  rig.spawner.exit(1, ExitStatus::killed_by(SIGSEGV));
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.root_cause == 1u);
  CHECK(outcome.workers[0].status.signal == SIGKILL);
  CHECK(outcome.workers[2].status.signal == SIGKILL);
  // The order of a teardown: the stop signal to every other worker, SIGKILL
  // to every one still there, then each tree is ended and strays collected.
  Journal after_failure(rig.spawner.journal.begin() + 4, rig.spawner.journal.end());
  CHECK(after_failure == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 2 SIGTERM",
                                 "signal 2 SIGCONT", "signal 0 SIGKILL", "signal 2 SIGKILL",
                                 "end_tree 0", "end_tree 1", "end_tree 2", "kill_strays"});
}

TEST_CASE("gang: a supervisor that does not go after the job ended is killed",
          "[supervise][gang]") {
  GangSettings settings = patient();
  settings.supervisor_limit = std::chrono::milliseconds(20);
  Rig rig(settings);
  rig.spawner.supervisors_stuck = true;
  rig.start(2);
  rig.run_until([&] { return rig.spawner.started() == 2; });
  rig.spawner.exit(0, ExitStatus::exited_with(0));
  rig.spawner.exit(1, ExitStatus::exited_with(0));
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.succeeded());
  CHECK(rig.entries("kill_supervisor") == Journal{"kill_supervisor 0", "kill_supervisor 1"});
}

TEST_CASE("gang: a stop during the spawn starts no further worker", "[supervise][gang]") {
  Rig rig;
  // As a signal handler would: on the loop, right after the third start.
  rig.spawner.after_start = [&](std::size_t index) {
    if (index == 2) boost::asio::post(rig.io, [&] { rig.gang.stop(SIGTERM); });
  };
  rig.start(6);
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.stopped_by_signal == SIGTERM);
  CHECK_FALSE(outcome.root_cause);
  CHECK(rig.spawner.started() == 3);
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("worker " << i);
    CHECK(outcome.workers[i].started == (i < 3));
  }
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 1 SIGTERM",
                                         "signal 1 SIGCONT", "signal 2 SIGTERM",
                                         "signal 2 SIGCONT"});
}

TEST_CASE("gang: a second stop kills at once", "[supervise][gang]") {
  Rig rig;
  rig.spawner.workers_ignore_stop = true;
  rig.start(2);
  rig.run_until([&] { return rig.spawner.started() == 2; });
  rig.gang.stop(SIGINT);
  CHECK(rig.entries("signal") ==
        Journal{"signal 0 SIGINT", "signal 0 SIGCONT", "signal 1 SIGINT", "signal 1 SIGCONT"});
  CHECK(rig.gang.live_workers() == 2);
  rig.gang.stop(SIGINT);
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.stopped_by_signal == SIGINT);
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGINT", "signal 0 SIGCONT", "signal 1 SIGINT",
                                         "signal 1 SIGCONT", "signal 0 SIGKILL",
                                         "signal 1 SIGKILL"});
  CHECK(outcome.workers[0].status.signal == SIGKILL);
}

TEST_CASE("gang: a worker gangrun cannot start is the root cause", "[supervise][gang]") {
  Rig rig;
  rig.spawner.fail_start_at = 1;
  rig.start(3);
  AttemptOutcome outcome = rig.finish();
  REQUIRE(outcome.root_cause == 1u);
  const auto& failed = outcome.workers[1];
  REQUIRE(failed.spawn_error);
  CHECK_THAT(failed.spawn_error->describe(), Contains("Too many open files"));
  CHECK(failed.status.code == gangrun::exit_codes::k_system_failure);
  CHECK(outcome.workers[0].stopped_by_gangrun);
  CHECK_FALSE(outcome.workers[2].started);  // the spawning stopped at the failure
  CHECK(rig.spawner.started() == 1);
}

TEST_CASE("gang: an exec failure under the supervisor is the root cause", "[supervise][gang]") {
  Rig rig;
  rig.spawner.exec_fails_at = 0;
  rig.start(2);
  AttemptOutcome outcome = rig.finish();
  REQUIRE(outcome.root_cause == 0u);
  REQUIRE(outcome.workers[0].spawn_error);
  CHECK_THAT(outcome.workers[0].spawn_error->describe(), Contains("/opt/train"));
  CHECK(outcome.workers[0].status.code == gangrun::exit_codes::k_not_found);
  // The report came before the next worker's turn: the spawning stopped.
  CHECK_FALSE(outcome.workers[1].started);
}

TEST_CASE("gang: a worker whose supervisor was killed is lost and is the root cause",
          "[supervise][gang]") {
  Rig rig;
  rig.start(2);
  rig.run_until([&] { return rig.spawner.started() == 2; });
  rig.spawner.lose_supervisor(1);
  AttemptOutcome outcome = rig.finish();
  REQUIRE(outcome.root_cause == 1u);
  CHECK(outcome.workers[1].status.signal == SIGKILL);
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGTERM", "signal 0 SIGCONT"});
}

TEST_CASE("gang: forwarded signals reach every live worker without a teardown",
          "[supervise][gang]") {
  Rig rig;
  rig.start(2);
  rig.run_until([&] { return rig.spawner.started() == 2; });
  rig.gang.forward(SIGUSR1);
  rig.spawner.exit(0, ExitStatus::exited_with(0));
  rig.spawner.exit(1, ExitStatus::exited_with(0));
  AttemptOutcome outcome = rig.finish();
  CHECK(outcome.succeeded());
  CHECK(rig.entries("signal") == Journal{"signal 0 SIGUSR1", "signal 1 SIGUSR1"});
  CHECK_FALSE(outcome.workers[0].stopped_by_gangrun);
}

TEST_CASE("gang: a teardown's stop signal is followed by SIGCONT, a forwarded signal is not",
          "[supervise][gang]") {
  // A worker stopped from outside acts on nothing but SIGKILL until it runs
  // again: a teardown continues it, so that it ends with the stop signal; a
  // forwarded signal, or a file timer's, leaves it stopped.
  GangSettings settings = patient();
  settings.second_stop_signal = SIGTERM;  // as the tools' gang has it
  Rig rig(settings);
  rig.spawner.workers_ignore_stop = true;
  rig.start(2);
  rig.run_until([&] { return rig.gang.live_worker_list().size() == 2; });
  for (int forwarded : {SIGUSR1, SIGSTOP, SIGCONT}) rig.gang.forward(forwarded);
  rig.gang.signal_worker(1001, SIGTERM);
  const Journal not_torn_down = {"signal 0 SIGUSR1", "signal 1 SIGUSR1", "signal 0 SIGSTOP",
                                 "signal 1 SIGSTOP", "signal 0 SIGCONT", "signal 1 SIGCONT",
                                 "signal 1 SIGTERM"};
  CHECK(rig.entries("signal") == not_torn_down);
  auto after = [&](Journal more) {
    Journal all = not_torn_down;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };

  SECTION("a stop signal, and a second one") {
    rig.gang.stop(SIGQUIT);
    CHECK(rig.entries("signal") ==
          after({"signal 0 SIGQUIT", "signal 0 SIGCONT", "signal 1 SIGQUIT", "signal 1 SIGCONT"}));
    rig.gang.stop(SIGQUIT);
    CHECK(rig.entries("signal") ==
          after({"signal 0 SIGQUIT", "signal 0 SIGCONT", "signal 1 SIGQUIT", "signal 1 SIGCONT",
                 "signal 0 SIGTERM", "signal 0 SIGCONT", "signal 1 SIGTERM", "signal 1 SIGCONT"}));
  }
  SECTION("a hang") {
    rig.gang.stop_hung();
    CHECK(rig.entries("signal") ==
          after({"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 1 SIGTERM", "signal 1 SIGCONT"}));
  }
  SECTION("a failure") {
    rig.spawner.exit(0, ExitStatus::exited_with(1));
    rig.run_until([&] { return rig.entries("signal").size() > not_torn_down.size() + 1; });
    CHECK(rig.entries("signal") == after({"signal 1 SIGTERM", "signal 1 SIGCONT"}));
  }
  for (std::size_t i = 0; i < 2; ++i) rig.spawner.exit(i, ExitStatus::killed_by(SIGTERM));
  rig.finish();
}

TEST_CASE("gang: the same gang runs the next attempt from the done handler", "[supervise][gang]") {
  Rig rig;
  std::vector<AttemptOutcome> attempts;
  std::function<void(AttemptOutcome)> on_done = [&](AttemptOutcome outcome) {
    attempts.push_back(std::move(outcome));
    if (attempts.size() == 1) rig.gang.start(launches(2), on_done);  // as the agent restarts
  };
  rig.gang.start(launches(2), on_done);
  rig.run_until([&] { return rig.spawner.started() == 2; });
  rig.spawner.exit(0, ExitStatus::exited_with(5));
  rig.run_until([&] { return rig.spawner.started() == 4; });
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0].root_cause == 0u);
  CHECK(rig.gang.running());
  rig.spawner.exit(2, ExitStatus::exited_with(0));
  rig.spawner.exit(3, ExitStatus::exited_with(0));
  rig.run_until([&] { return attempts.size() == 2; });
  // The second attempt starts fresh: nothing of the first one's failure.
  CHECK(attempts[1].succeeded());
  CHECK(attempts[1].workers[0].pid == 1002);
  CHECK_FALSE(attempts[1].workers[0].stopped_by_gangrun);
}

TEST_CASE("gang: in the failure window, the rank still running when the others failed is blamed",
          "[supervise][gang]") {
  GangSettings settings = patient();
  settings.failure_window = std::chrono::minutes(10);  // closed by the test
  std::vector<std::size_t> failures_seen;
  settings.on_failure = [&](const AttemptOutcome& so_far) {
    std::size_t failed = 0;
    for (const auto& worker : so_far.workers) failed += worker.status.success() ? 0 : 1;
    failures_seen.push_back(failed);
  };
  Rig rig(settings);
  rig.start(4);
  rig.run_until([&] { return rig.spawner.started() == 4; });
  rig.spawner.exit(0, ExitStatus::exited_with(1));
  rig.run_until([&] { return failures_seen.size() == 1; });
  // The others are not stopped while the window is open.
  CHECK(rig.entries("signal").empty());
  rig.spawner.exit(1, ExitStatus::exited_with(1));
  rig.spawner.exit(3, ExitStatus::exited_with(1));
  rig.run_until([&] { return failures_seen.size() == 3; });
  CHECK(rig.entries("signal").empty());
  rig.gang.close_failure_window();
  AttemptOutcome outcome = rig.finish();
  CHECK(failures_seen == std::vector<std::size_t>{1, 2, 3});
  REQUIRE(outcome.blame);
  CHECK(outcome.blame->waited_for == std::vector<int>{12});
  CHECK(outcome.blame->waiting == std::vector<int>{10, 11, 13});
  CHECK(outcome.root_cause == 2u);
  CHECK(outcome.first_failure == 0u);
  CHECK(outcome.workers[2].stopped_by_gangrun);
  CHECK(rig.entries("signal") == Journal{"signal 2 SIGTERM", "signal 2 SIGCONT"});
  CHECK_FALSE(outcome.succeeded());
}

TEST_CASE("gang: the failure window closes when every worker has ended", "[supervise][gang]") {
  GangSettings settings = patient();
  settings.failure_window = std::chrono::minutes(10);  // never reached
  Rig rig(settings);
  rig.start(4);
  rig.run_until([&] { return rig.spawner.started() == 4; });
  SECTION("a rank that exited before anyone failed is the one the others waited for") {
    // Handled in this order (the loop idles between turns only when it has
    // nothing left to do).
    rig.spawner.exit(2, ExitStatus::exited_with(0));
    for (std::size_t i : {0u, 1u, 3u}) rig.spawner.exit(i, ExitStatus::exited_with(1));
    AttemptOutcome outcome = rig.finish();
    REQUIRE(outcome.blame);
    CHECK_FALSE(outcome.blame->never_exited);
    CHECK(outcome.root_cause == 2u);
    CHECK(outcome.first_failure == 0u);
  }
  SECTION("everyone failed: the first failure is the root cause") {
    for (std::size_t i = 0; i < 4; ++i) rig.spawner.exit(i, ExitStatus::exited_with(2));
    AttemptOutcome outcome = rig.finish();
    CHECK_FALSE(outcome.blame);
    CHECK(outcome.root_cause == outcome.first_failure);
  }
  CHECK(rig.entries("signal").empty());
}

TEST_CASE("gang: when the failure window runs out the first failure stops the rest",
          "[supervise][gang]") {
  GangSettings settings = patient();
  settings.failure_window = std::chrono::milliseconds(1);
  Rig rig(settings);
  rig.start(3);
  rig.run_until([&] { return rig.spawner.started() == 3; });
  rig.spawner.exit(1, ExitStatus::exited_with(4));
  AttemptOutcome outcome = rig.finish();
  CHECK_FALSE(outcome.blame);
  CHECK(outcome.root_cause == 1u);
  CHECK(outcome.first_failure == 1u);
  CHECK(rig.entries("signal") ==
        Journal{"signal 0 SIGTERM", "signal 0 SIGCONT", "signal 2 SIGTERM", "signal 2 SIGCONT"});
}
