// Completing an attempt's record once its gang is done
// (agent/round_record.hpp): the doctor's findings first, then, for a silent
// exit 1 of a Python script, the interpreter probe, here through the fake
// spawner.
#include "agent/round_record.hpp"
#include "fake_spawner.hpp"
#include "temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <functional>

using gangrun::agent::complete_last_attempt;
using gangrun::agent::FindingsReader;
using gangrun::agent::InterpreterProbe;
using gangrun::report::AttemptRecord;
using gangrun::report::DoctorFindings;
using gangrun::report::RunRecord;
using gangrun::report::WorkerRecord;
using gangrun::supervise::ExitStatus;
using gangrun::testing::FakeSpawner;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

struct Rig {
  void run_until(const std::function<bool()>& until) {
    while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
  }

  // Holds the doctor's answer until the test gives it.
  FindingsReader held_reader() {
    return [this](std::function<void(DoctorFindings)> then) { held = std::move(then); };
  }

  boost::asio::io_context io;
  FakeSpawner spawner{io};
  InterpreterProbe probe{io, spawner};
  std::function<void(DoctorFindings)> held;
  bool done = false;
};

// A first failure of rank 1 that exited 1 with no output captured.
RunRecord silent_exit_1() {
  RunRecord record;
  AttemptRecord attempt;
  attempt.workers = {WorkerRecord{}, WorkerRecord{}};
  attempt.workers[1].rank = 1;
  attempt.workers[1].exit_code = 1;
  attempt.workers[1].shell_code = 1;
  attempt.first_failure = 1;
  attempt.root_cause = 1;
  record.attempts.push_back(attempt);
  return record;
}

DoctorFindings some_findings() {
  DoctorFindings found;
  found.flight_recorder_dumps = {"dump-0"};
  return found;
}

}  // namespace

TEST_CASE("round record: the doctor's findings land in the attempt before what follows",
          "[agent][round]") {
  Rig rig;
  gangrun::launch::LaunchPlan plan;  // no interpreter: nothing to probe
  RunRecord record = silent_exit_1();
  complete_last_attempt(plan, record, rig.probe, rig.held_reader(), [&] { rig.done = true; });
  REQUIRE(rig.held);
  CHECK_FALSE(rig.done);  // a reading still under way is waited for
  rig.held(some_findings());
  CHECK(rig.done);
  CHECK(record.attempts.back().doctor.flight_recorder_dumps == std::vector<std::string>{"dump-0"});
  CHECK(rig.spawner.started() == 0);
}

TEST_CASE("round record: a silent exit 1 of a Python script asks the interpreter, then goes on",
          "[agent][round]") {
  gangrun::test::TempDir dir;
  Rig rig;
  gangrun::launch::LaunchPlan plan;
  plan.program.entrypoint = dir.write("train.py", "import torch\nimport deepspeed\n");
  plan.program.interpreter = gangrun::report::Interpreter{.path = "/venv/bin/python"};
  RunRecord record = silent_exit_1();
  complete_last_attempt(plan, record, rig.probe, rig.held_reader(), [&] { rig.done = true; });
  rig.held(some_findings());
  // The probe's children run on the loop; the attempt waits for them.
  rig.run_until([&] { return rig.spawner.started() == 1; });
  CHECK_FALSE(rig.done);
  CHECK(rig.spawner.worker(0).spec.executable == "/venv/bin/python");
  CHECK(rig.spawner.worker(0).spec.argv.back() == "torch");
  rig.spawner.exit(0, ExitStatus::exited_with(0));  // torch is found
  rig.run_until([&] { return rig.spawner.started() == 2; });
  CHECK(rig.spawner.worker(1).spec.argv.back() == "deepspeed");
  rig.spawner.exit(1, ExitStatus::exited_with(3));  // deepspeed is not
  rig.run_until([&] { return rig.done; });
  const AttemptRecord& attempt = record.attempts.back();
  CHECK(attempt.workers[1].unimportable_module == "deepspeed");
  CHECK(attempt.doctor.flight_recorder_dumps == std::vector<std::string>{"dump-0"});

  SECTION("output captured: nothing to ask") {
    RunRecord spoke = silent_exit_1();
    spoke.attempts.back().workers[1].last_lines = {"Traceback ..."};
    bool spoke_done = false;
    complete_last_attempt(plan, spoke, rig.probe, rig.held_reader(), [&] { spoke_done = true; });
    rig.held(DoctorFindings{});
    CHECK(spoke_done);
    CHECK(rig.spawner.started() == 2);
  }
}
