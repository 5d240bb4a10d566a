// The interpreter probe through the fake spawner (fake_spawner.hpp): it
// asks one package after another on the loop, and never blocks it.
#include "agent/interpreter_probe.hpp"
#include "fake_spawner.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <functional>
#include <optional>

using gangrun::agent::InterpreterProbe;
using gangrun::supervise::ExitStatus;
using gangrun::testing::FakeSpawner;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

struct Rig {
  explicit Rig(std::chrono::milliseconds per_package = std::chrono::minutes(10))
      : probe(io, spawner, per_package) {}

  void start(std::vector<std::string> packages) {
    probe.start("/venv/bin/python", {{"PATH", "/venv/bin"}}, std::move(packages),
                [this](std::optional<std::string> found) {
                  done = true;
                  unimportable = std::move(found);
                });
  }

  void run_until(const std::function<bool()>& until) {
    while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
  }

  boost::asio::io_context io;
  FakeSpawner spawner{io};
  InterpreterProbe probe;
  bool done = false;
  std::optional<std::string> unimportable;
};

}  // namespace

TEST_CASE("interpreter probe: one package after another, the first not found is the finding",
          "[agent][probe]") {
  Rig rig;
  rig.start({"torch", "accelerate", "deepspeed"});
  rig.run_until([&] { return rig.spawner.started() == 1; });
  CHECK(rig.spawner.worker(0).spec.executable == "/venv/bin/python");
  CHECK(rig.spawner.worker(0).spec.argv.back() == "torch");
  // The probe's shim is kept out of stray reaping while it runs.
  CHECK(rig.probe.supervisor_pids() == std::set<pid_t>{rig.spawner.worker(0).pid + 10000});
  rig.spawner.exit(0, ExitStatus::exited_with(0));  // found
  rig.run_until([&] { return rig.spawner.started() == 2; });
  CHECK(rig.spawner.worker(1).spec.argv.back() == "accelerate");
  rig.spawner.exit(1, ExitStatus::exited_with(3));  // not found
  rig.run_until([&] { return rig.done; });
  CHECK(rig.unimportable == "accelerate");
  CHECK(rig.spawner.started() == 2);
  CHECK(rig.probe.supervisor_pids().empty());
  CHECK_FALSE(rig.probe.running());
}

TEST_CASE("interpreter probe: every package found, or a probe that fails, finds nothing",
          "[agent][probe]") {
  SECTION("all found") {
    Rig rig;
    rig.start({"torch"});
    rig.run_until([&] { return rig.spawner.started() == 1; });
    rig.spawner.exit(0, ExitStatus::exited_with(0));
    rig.run_until([&] { return rig.done; });
    CHECK_FALSE(rig.unimportable);
  }
  SECTION("the interpreter crashed") {
    Rig rig;
    rig.start({"torch", "accelerate"});
    rig.run_until([&] { return rig.spawner.started() == 1; });
    rig.spawner.exit(0, ExitStatus::killed_by(SIGSEGV));
    rig.run_until([&] { return rig.done; });
    CHECK_FALSE(rig.unimportable);
    CHECK(rig.spawner.started() == 1);
  }
  SECTION("it cannot be started") {
    Rig rig;
    rig.spawner.exec_fails_at = 0;
    rig.start({"torch"});
    rig.run_until([&] { return rig.done; });
    CHECK_FALSE(rig.unimportable);
  }
  SECTION("it runs past its time: its tree is ended") {
    Rig rig(std::chrono::milliseconds(1));
    rig.start({"torch"});
    rig.run_until([&] { return rig.done; });
    CHECK_FALSE(rig.unimportable);
    CHECK(rig.spawner.journal == std::vector<std::string>{"start 0", "end_tree 0"});
  }
}

TEST_CASE("interpreter probe: the loop goes on while it runs", "[agent][probe]") {
  Rig rig;
  rig.start({"torch"});
  rig.run_until([&] { return rig.spawner.started() == 1; });
  // Another handler (the store answering a client) runs while the
  // interpreter has not answered yet.
  bool answered = false;
  boost::asio::post(rig.io, [&] { answered = true; });
  rig.run_until([&] { return answered; });
  CHECK_FALSE(rig.done);
  rig.spawner.exit(0, ExitStatus::exited_with(3));
  rig.run_until([&] { return rig.done; });
  CHECK(rig.unimportable == "torch");
}
