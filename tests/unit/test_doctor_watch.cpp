// The gang doctor on one node: --hang-timeout's values, the hang watch's
// timer (it waits from the last line, not from the round's start), and the
// stack probe reading every rank at once through the real spawn path, with a
// stand-in for py-spy (a script that prints what py-spy would, fails as it
// would, or never ends).
#include "config/option_values.hpp"
#include "doctor/watch/file_timers.hpp"
#include "doctor/watch/flight_recorder.hpp"
#include "doctor/watch/hang_watch.hpp"
#include "doctor/watch/stack_probe.hpp"
#include "supervise/shim_spawner.hpp"
#include "temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

using Catch::Matchers::Contains;
using gangrun::doctor::HangWatch;
using gangrun::doctor::RankStacks;
using gangrun::doctor::StackProbe;
using gangrun::test::TempDir;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds k_event_limit{30};

void run_until(boost::asio::io_context& io, const std::function<bool()>& until) {
  while (!until()) REQUIRE(io.run_one_for(k_event_limit) > 0);
}

// What py-spy 0.4's `dump --json` prints for a process whose main thread is in
// load_batch (fields gangrun does not read left out).
const char* const k_stand_in_tool = R"(#!/bin/sh
case "$4" in
  1) cat <<'JSON'
[{"thread_name": "MainThread", "os_thread_id": 1, "active": false,
  "frames": [{"name": "load_batch", "filename": "/job/train.py", "short_filename": "train.py",
              "line": 2}]}]
JSON
  ;;
  2) echo "Error: Failed to find python version from target process" >&2; exit 1 ;;
  *) exec sleep 600 ;;
esac
)";

}  // namespace

TEST_CASE("the hang timeout takes seconds or a unit, and 0 or off for none", "[doctor][config]") {
  using gangrun::config::parse_watch_duration;
  CHECK(parse_watch_duration("300").value() == 300.0);
  CHECK(parse_watch_duration("2.5").value() == 2.5);
  CHECK(parse_watch_duration("90s").value() == 90.0);
  CHECK(parse_watch_duration("5m").value() == 300.0);
  CHECK(parse_watch_duration(" 1H ").value() == 3600.0);
  CHECK_FALSE(parse_watch_duration("0").value().has_value());
  CHECK_FALSE(parse_watch_duration("off").value().has_value());
  for (const char* bad : {"soon", "", "-1", "2d", "25h", "nan", "m"}) {
    INFO(bad);
    auto parsed = parse_watch_duration(bad);
    REQUIRE_FALSE(parsed);
    CHECK_THAT(parsed.error().message(), Contains("not a duration"));
  }
}

TEST_CASE("the hang watch reports a silent gang once, and only after the timeout",
          "[doctor][watch]") {
  boost::asio::io_context io;
  std::optional<HangWatch::Clock::duration> silent_for;
  int reports = 0;
  HangWatch watch(
      io, 50ms, [] { return HangWatch::Progress{}; },
      [&](HangWatch::Clock::duration silent) {
        silent_for = silent;
        ++reports;
      });
  auto started = HangWatch::Clock::now();
  watch.start();
  run_until(io, [&] { return silent_for.has_value(); });
  CHECK(*silent_for >= 50ms);
  CHECK(HangWatch::Clock::now() - started >= 50ms);
  // Once reported, it waits for the next start(): the loop runs dry.
  io.restart();
  io.poll();
  CHECK(reports == 1);
}

TEST_CASE("the hang watch counts the silence from the last line of any rank", "[doctor][watch]") {
  boost::asio::io_context io;
  auto started = HangWatch::Clock::now();
  // Rank 1 printed a line 80 ms after the start (as the watch sees it when it
  // first looks): the silence is counted from there.
  auto line_at = started + 80ms;
  std::optional<HangWatch::Clock::time_point> reported_at;
  HangWatch watch(
      io, 50ms,
      [&] {
        HangWatch::Progress progress;
        progress.workers = {line_at};
        return progress;
      },
      [&](HangWatch::Clock::duration silent) {
        CHECK(silent >= 50ms);
        reported_at = HangWatch::Clock::now();
      });
  watch.start();
  run_until(io, [&] { return reported_at.has_value(); });
  CHECK(*reported_at - line_at >= 50ms);
}

TEST_CASE("the stack probe reads every rank at once and says why a rank has no stack",
          "[doctor][watch]") {
  TempDir dir;
  // The stand-in answers by the pid it is given: 1 a stack, 2 "not Python",
  // anything else never ends (so the limit ends it).
  std::string tool = dir.write("py-spy", k_stand_in_tool, true);
  boost::asio::io_context io;
  gangrun::supervise::ShimSpawner spawner(io);
  StackProbe probe(io, spawner);
  std::optional<std::vector<RankStacks>> found;
  probe.start(tool, "node0", {{.rank = 0, .pid = 1}, {.rank = 1, .pid = 2}, {.rank = 2, .pid = 3}},
              {{"PATH", "/usr/bin:/bin"}}, 2000ms,
              [&](std::vector<RankStacks> ranks) { found = std::move(ranks); });
  CHECK(probe.running());
  CHECK(probe.supervisor_pids().size() == 3);  // kept out of stray reaping
  run_until(io, [&] { return found.has_value(); });
  REQUIRE(found->size() == 3);
  const RankStacks& read = (*found)[0];
  CHECK(read.rank == 0);
  CHECK(read.host == "node0");
  CHECK_FALSE(read.unavailable.has_value());
  REQUIRE(read.threads.size() == 1);
  CHECK(read.threads[0].frames.at(0).function == "load_batch");
  REQUIRE((*found)[1].unavailable);
  CHECK_THAT(*(*found)[1].unavailable, Contains("not a Python process"));
  REQUIRE((*found)[2].unavailable);
  CHECK_THAT(*(*found)[2].unavailable, Contains("did not finish within 2000 ms"));
  CHECK_FALSE(probe.running());
  CHECK(probe.supervisor_pids().empty());
}

TEST_CASE("the stack probe reads a stopped rank without pausing it and names it stopped",
          "[doctor][watch]") {
  // A real process, stopped as kill -STOP would; the stand-in fails a
  // pausing read as py-spy does for a stopped process.
  pid_t stopped = ::fork();
  REQUIRE(stopped >= 0);
  if (stopped == 0) {
    for (;;) ::pause();
  }
  struct Ends {  // the child, whatever the test finds
    pid_t pid;
    ~Ends() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } ends{stopped};
  ::kill(stopped, SIGSTOP);
  int status = 0;
  REQUIRE(::waitpid(stopped, &status, WUNTRACED) == stopped);
  REQUIRE(WIFSTOPPED(status));
  TempDir dir;
  std::string tool = dir.write("py-spy",
                               "#!/bin/sh\n"
                               "case \" $* \" in *' --nonblocking '*) ;; *)\n"
                               "  echo 'Error: Failed to suspend process' >&2; exit 1 ;;\n"
                               "esac\n"
                               "echo '[{\"thread_name\": \"MainThread\", \"os_thread_id\": 1, "
                               "\"active\": false, \"frames\": [{\"name\": \"all_reduce\", "
                               "\"short_filename\": \"train.py\", \"line\": 7}]}]'\n",
                               true);
  boost::asio::io_context io;
  gangrun::supervise::ShimSpawner spawner(io);
  StackProbe probe(io, spawner);
  std::optional<std::vector<RankStacks>> found;
  probe.start(tool, "node0", {{.rank = 1, .pid = stopped}}, {{"PATH", "/usr/bin:/bin"}}, 20000ms,
              [&](std::vector<RankStacks> ranks) { found = std::move(ranks); });
  run_until(io, [&] { return found.has_value(); });
  REQUIRE(found->size() == 1);
  const RankStacks& read = (*found)[0];
  CHECK(read.stopped == 'T');
  CHECK_FALSE(read.unavailable);
  REQUIRE(read.threads.size() == 1);
  CHECK(read.threads[0].frames.at(0).function == "all_reduce");
}

TEST_CASE("without a stack tool every rank says so, with what /proc knows", "[doctor][watch]") {
  boost::asio::io_context io;
  gangrun::supervise::ShimSpawner spawner(io);
  StackProbe probe(io, spawner);
  std::optional<std::vector<RankStacks>> found;
  probe.start(std::nullopt, "node0", {{.rank = 3, .pid = ::getpid()}}, {}, 1000ms,
              [&](std::vector<RankStacks> ranks) { found = std::move(ranks); });
  CHECK_FALSE(found);  // never from inside start
  run_until(io, [&] { return found.has_value(); });
  REQUIRE(found->size() == 1);
  REQUIRE((*found)[0].unavailable);
  CHECK_THAT(*(*found)[0].unavailable, Contains("py-spy not found; the process is running"));
}

TEST_CASE("torch's file timers: requests are signs of life, an expired timer is reported once",
          "[doctor][watch]") {
  TempDir dir;
  boost::asio::io_context io;
  std::vector<gangrun::doctor::FileTimers::Expired> expired;
  auto opened = gangrun::doctor::FileTimers::open(
      io, dir / "timers",
      [&](const gangrun::doctor::FileTimers::Expired& e) { expired.push_back(e); });
  REQUIRE(opened);
  gangrun::doctor::FileTimers& timers = **opened;
  CHECK_FALSE(timers.last_request_from(41));
  // As FileTimerClient writes them: one JSON line per request, through a
  // descriptor it opens without blocking.
  auto send = [&](const std::string& line) {
    int fd = ::open(timers.path().c_str(), O_WRONLY | O_NONBLOCK);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, (line + "\n").data(), line.size() + 1) ==
            static_cast<ssize_t>(line.size() + 1));
    ::close(fd);
  };
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Rank 41's timer is released before it expires; 42's expires (its two
  // scopes are one report); a line that is not a request is ignored.
  send(R"({"version": 1, "pid": 41, "scope_id": "step", "expiration_time": )" +
       std::to_string(now + 3600) + R"(, "signal": 9})");
  send(R"({"version": 1, "pid": 41, "scope_id": "step", "expiration_time": -1, "signal": 0})");
  send("garbage");
  // One write, so that both of 42's requests are read together.
  send(R"({"version": 1, "pid": 42, "scope_id": "load", "expiration_time": )" +
       std::to_string(now - 1) + R"(, "signal": 9})" + "\n" +
       R"({"version": 1, "pid": 42, "scope_id": "step", "expiration_time": )" +
       std::to_string(now - 2) + R"(, "signal": 15})");
  run_until(io, [&] { return !expired.empty(); });
  CHECK(timers.last_request_from(41));
  io.restart();
  io.poll();
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].pid == 42);
  CHECK(expired[0].late_s >= 1.0);
  CHECK(expired[0].signal > 0);
  std::string path = timers.path();
  opened->reset();
  CHECK_FALSE(std::filesystem::exists(path));  // the pipe goes with the server
}

TEST_CASE(
    "torch's file timers: an over-long line is dropped and reading resumes at the next; a "
    "signal that is none is refused",
    "[doctor][watch]") {
  using gangrun::doctor::FileTimers;
  TempDir dir;
  boost::asio::io_context io;
  std::vector<FileTimers::Expired> expired;
  auto opened = FileTimers::open(io, dir / "timers",
                                 [&](const FileTimers::Expired& e) { expired.push_back(e); });
  REQUIRE(opened);
  FileTimers& timers = **opened;
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto request = [&](int pid, int signal) {
    return R"({"version": 1, "pid": )" + std::to_string(pid) +
           R"(, "scope_id": "step", "expiration_time": )" + std::to_string(now - 1) +
           R"(, "signal": )" + std::to_string(signal) + "}";
  };
  // 43's request is valid JSON behind 4 MiB of spaces: read whole, it would
  // count; too long, it is dropped. 45 asks for signal 265, which an
  // unsigned char made 9 (SIGKILL). 44's request after them is read.
  const std::string text = std::string(4 << 20, ' ') + request(43, 9) + "\n" + request(45, 265) +
                           "\n" + request(44, 15) + "\n";
  // The pipe holds 64 KiB: a thread writes while the loop reads.
  std::thread writer([&] {
    int fd = ::open(timers.path().c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    for (std::size_t at = 0; at < text.size();) {
      ssize_t wrote = ::write(fd, text.data() + at, text.size() - at);
      if (wrote <= 0) break;
      at += static_cast<std::size_t>(wrote);
    }
    ::close(fd);
  });
  std::size_t most_buffered = 0;
  run_until(io, [&] {
    most_buffered = std::max(most_buffered, timers.buffered_bytes());
    return !expired.empty();
  });
  writer.join();
  io.restart();
  io.poll();
  CHECK(most_buffered <= FileTimers::k_max_line_bytes);
  CHECK(timers.dropped_lines() == 1);
  CHECK(timers.refused_requests() == 1);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].pid == 44);
  CHECK(expired[0].signal == 15);
  CHECK(timers.last_request_from(45));  // a refused request is still a sign of life
  CHECK_FALSE(timers.last_request_from(43));

  SECTION("signals are whole numbers from 0 to SIGRTMAX") {
    expired.clear();
    int fd = ::open(timers.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string more;
    for (const char* signal : {"-9", "9.5", "\"9\"", "18446744073709551625", "65"}) {
      more += R"({"version": 1, "pid": 46, "scope_id": "s", "expiration_time": 1, "signal": )" +
              std::string(signal) + "}\n";
    }
    more += R"({"version": 1, "pid": 47, "scope_id": "s", "expiration_time": 1, "signal": )" +
            std::to_string(SIGRTMAX) + "}\n";
    REQUIRE(::write(fd, more.data(), more.size()) == static_cast<ssize_t>(more.size()));
    ::close(fd);
    run_until(io, [&] { return !expired.empty(); });
    io.restart();
    io.poll();
    CHECK(timers.refused_requests() == 1 + 5);
    REQUIRE(expired.size() == 1);
    CHECK(expired[0].pid == 47);
    CHECK(expired[0].signal == SIGRTMAX);
  }
}

TEST_CASE(
    "after a reported hang the watch reports again a timeout later, counting the whole silence",
    "[doctor][watch]") {
  boost::asio::io_context io;
  std::vector<HangWatch::Clock::duration> reports;
  std::optional<HangWatch> watch;
  watch.emplace(
      io, 40ms, [] { return HangWatch::Progress{}; },
      [&](HangWatch::Clock::duration silent) {
        reports.push_back(silent);
        if (reports.size() < 2) watch->watch_again();
      });
  watch->start();
  run_until(io, [&] { return reports.size() == 2; });
  CHECK(reports[0] >= 40ms);
  CHECK(reports[1] >= reports[0] + 40ms);  // the silence goes on from the round's start
}

TEST_CASE("the flight recorder watch lists the round's dumps in the round's findings",
          "[doctor][watch]") {
  TempDir attempt;
  const gangrun::EnvMap host_env = {{"TORCH_NCCL_DUMP_ON_TIMEOUT", "0"}};
  gangrun::doctor::FlightRecorder recorder(host_env);
  gangrun::report::DoctorFindings before_any_round;
  recorder.add_findings(before_any_round);
  CHECK(before_any_round.flight_recorder_dumps.empty());

  gangrun::EnvMap env = recorder.worker_env(attempt.path().string());
  CHECK(env.at("TORCH_FR_DUMP_TEMP_FILE") == attempt / "flight_recorder/rank_");
  CHECK_FALSE(env.contains("TORCH_NCCL_DUMP_ON_TIMEOUT"));  // the user's own stays
  CHECK(recorder.request_dumps() == 0);                     // no rank made its pipe
  attempt.write("flight_recorder/rank_1", "dump");
  attempt.write("flight_recorder/rank_0", "dump");
  gangrun::report::DoctorFindings found;
  recorder.add_findings(found);
  CHECK(found.flight_recorder_dumps ==
        std::vector<std::string>{attempt / "flight_recorder/rank_0",
                                 attempt / "flight_recorder/rank_1"});
}
