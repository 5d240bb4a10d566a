// The gang doctor's watches that read stacks on an event, on one node,
// through the fake spawner (fake_spawner.hpp) and with no stack tool (every
// rank's reading says so at once): the hang's response (hang_response.hpp)
// reads, tells and acts on --on-hang; an expired file timer
// (file_timer_watch.hpp) is named with every rank's stack, then its signal
// goes out.
#include "doctor/watch/doctor_round.hpp"
#include "doctor/watch/file_timer_watch.hpp"
#include "doctor/watch/hang_response.hpp"
#include "doctor/watch/stack_reader.hpp"
#include "fake_spawner.hpp"
#include "supervise/gang.hpp"
#include "temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <functional>
#include <optional>

using gangrun::doctor::DoctorRound;
using gangrun::doctor::FileTimerWatch;
using gangrun::doctor::HangResponse;
using gangrun::doctor::HangWatch;
using gangrun::report::DoctorFindings;
using gangrun::testing::FakeSpawner;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

// A round of two running workers (pids 1000 and 1001, ranks 0 and 1) on one node.
struct Rig {
  explicit Rig(gangrun::config::OnHang on_hang) {
    plan.doctor.hang_timeout_s = 0.05;
    plan.doctor.on_hang = on_hang;
    gangrun::supervise::GangSettings settings;
    settings.term_timeout = std::chrono::minutes(10);
    settings.supervisor_limit = std::chrono::minutes(10);
    gang.emplace(io, console, spawner, settings);
    std::vector<gangrun::supervise::WorkerLaunch> launches(2);
    for (int i = 0; i < 2; ++i) {
      launches[static_cast<std::size_t>(i)].rank = i;
      launches[static_cast<std::size_t>(i)].local_rank = i;
      launches[static_cast<std::size_t>(i)].spawn.executable = "/opt/train";
    }
    gang->start(launches, [](gangrun::supervise::AttemptOutcome) {});
    run_until([&] { return spawner.started() == 2; });
    round.hang_watched = true;
    round.start = HangWatch::Clock::now();
  }

  void run_until(const std::function<bool()>& until) {
    while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
  }

  HangResponse& hang_response() {
    response.emplace(
        io, HangResponse::Parts{.plan = plan, .gang = *gang, .reader = reader, .round = round},
        [] { return HangWatch::Progress{}; }, [this] { ++stops; }, [this] { ++readings_ended; });
    return *response;
  }

  std::optional<gangrun::report::HangFinding> hang_found() const {
    DoctorFindings findings;
    response->add_findings(findings);
    return findings.hang;
  }

  boost::asio::io_context io;
  gangrun::logmux::Console console;
  FakeSpawner spawner{io};
  gangrun::launch::LaunchPlan plan;
  std::optional<gangrun::supervise::Gang> gang;
  gangrun::doctor::StackReader reader{io, spawner, plan};
  DoctorRound round;
  std::optional<HangResponse> response;
  int stops = 0;
  int readings_ended = 0;
};

}  // namespace

TEST_CASE("a silent gang's stacks are read and told, then --on-hang stop ends the round",
          "[doctor][watch]") {
  Rig rig(gangrun::config::OnHang::stop);
  HangResponse& hang = rig.hang_response();
  hang.round_started({.store = "", .at = rig.round.start});
  rig.run_until([&] { return rig.stops == 1; });
  auto found = rig.hang_found();
  REQUIRE(found);
  CHECK(found->action == "stop");
  CHECK(found->timeout_s == 0.05);
  CHECK(found->silent_for_s >= 0.05);
  CHECK_FALSE(found->flight_recorder_dumps);  // no --flight-recorder
  // A new round forgets the last one's hang.
  hang.round_started({.store = "", .at = HangWatch::Clock::now()});
  CHECK_FALSE(rig.hang_found());
}

TEST_CASE("With --on-hang report the gang goes on and the whole silence is reported again later",
          "[doctor][watch]") {
  Rig rig(gangrun::config::OnHang::report);
  HangResponse& hang = rig.hang_response();
  hang.round_started({.store = "", .at = rig.round.start});
  rig.run_until([&] { return rig.hang_found().has_value(); });
  double first = rig.hang_found()->silent_for_s;
  CHECK(rig.hang_found()->action == "report");
  rig.run_until([&] { return rig.hang_found()->silent_for_s >= first + 0.05; });
  CHECK(rig.stops == 0);
}

TEST_CASE("a hang read while the round ends is told, not acted on: its action is none",
          "[doctor][watch]") {
  Rig rig(gangrun::config::OnHang::stop);
  HangResponse& hang = rig.hang_response();
  hang.round_started({.store = "", .at = rig.round.start});
  rig.run_until([&] { return rig.reader.running(); });
  rig.round.over = true;  // the doctor's round_ended
  hang.round_ended();
  rig.run_until([&] { return rig.readings_ended == 1; });
  CHECK(rig.stops == 0);
  auto found = rig.hang_found();
  REQUIRE(found);
  CHECK(found->action == "none");
}

TEST_CASE("an expired file timer is named with every rank's stack, then its signal goes out",
          "[doctor][watch]") {
  gangrun::test::TempDir dir;
  Rig rig(gangrun::config::OnHang::stop);
  rig.plan.host_env["TORCHELASTIC_TIMER_FILE"] = dir / "timers";
  int readings_ended = 0;
  std::unique_ptr<FileTimerWatch> watch =
      FileTimerWatch::open(rig.io, rig.plan, *rig.gang, rig.reader, [&] { ++readings_ended; });
  REQUIRE(watch);
  CHECK(watch->worker_env("/attempt") ==
        gangrun::EnvMap{{"TORCHELASTIC_TIMER_FILE", dir / "timers"}});
  watch->round_started({.store = "", .at = rig.round.start});
  CHECK_FALSE(watch->last_request_from(1001));
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string line = R"({"version": 1, "pid": 1001, "scope_id": "step", "expiration_time": )" +
                     std::to_string(now - 1) + R"(, "signal": 9})" + "\n";
  int fd = ::open((dir / "timers").c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  ::close(fd);
  rig.run_until([&] { return !rig.spawner.worker(1).signals.empty(); });
  CHECK(rig.spawner.worker(1).signals == std::vector<int>{9});
  CHECK(watch->last_request_from(1001));  // a sign of life for the hang watch
  CHECK(readings_ended == 0);             // the round goes on: nobody waited
  watch->round_ended();
  DoctorFindings findings;
  watch->add_findings(findings);
  REQUIRE(findings.timer_expired);
  CHECK(findings.timer_expired->rank == 1);
  CHECK(findings.timer_expired->scope_id == "step");
  CHECK(findings.timer_expired->stacks);
}
