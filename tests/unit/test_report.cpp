#include "report/error_file.hpp"
#include "report/failure_summary.hpp"
#include "report/run_report.hpp"
#include "report/worker_end.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace gangrun::report;

namespace {

fs::path temp_file(const std::string& content) {
  std::string pattern = (fs::temp_directory_path() / "gangrun-report-XXXXXX").string();
  int fd = ::mkstemp(pattern.data());
  ::close(fd);
  std::ofstream(pattern) << content;
  return pattern;
}

RunRecord failed_run() {
  RunRecord run;
  run.run_id = "none";
  run.host = "node1";
  run.entrypoint = "train.py";
  AttemptRecord attempt;
  WorkerRecord root;
  root.rank = 2;
  root.local_rank = 2;
  root.pid = 4242;
  root.exit_code = 3;
  root.shell_code = 3;
  root.last_lines = {"loading", "boom"};
  WorkerRecord other;
  other.rank = 0;
  other.pid = 4240;
  other.signal = 15;
  other.shell_code = 143;
  other.stopped_by_gangrun = true;
  attempt.workers = {other, root};
  attempt.root_cause = 1;
  run.attempts = {attempt};
  run.exit_code = 3;
  return run;
}

}  // namespace

TEST_CASE("report::read_worker_error reads torch's @record layout", "[report]") {
  fs::path file = temp_file(
      R"({"message": {"message": "ValueError: bad batch", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  x\nValueError: bad batch", "timestamp": "1700000000"}}})");
  auto read = read_worker_error(file.string());
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->message == "ValueError: bad batch");
  CHECK_THAT((*read)->traceback.value(), Catch::Contains("Traceback"));
  CHECK((*read)->timestamp == "1700000000");
  fs::remove(file);
}

TEST_CASE("report::read_worker_error reads the flat layout and tells missing from bad",
          "[report]") {
  fs::path flat = temp_file(R"({"message": "oops", "timestamp": 17})");
  auto read = read_worker_error(flat.string());
  REQUIRE(read);
  CHECK((*read)->message == "oops");
  fs::remove(flat);

  auto missing = read_worker_error("/nonexistent/error.json");
  REQUIRE(missing);
  CHECK_FALSE(*missing);

  fs::path garbage = temp_file("not json");
  CHECK_FALSE(read_worker_error(garbage.string()));
  fs::remove(garbage);
}

TEST_CASE("report::write_parent_error adds the exit code", "[report]") {
  WorkerError error;
  error.message = "E";
  error.raw = {{"message", {{"message", "E"}}}};
  fs::path out = temp_file("");
  REQUIRE(write_parent_error(out.string(), error, 3));
  nlohmann::json written = nlohmann::json::parse(std::ifstream(out));
  CHECK(written["message"]["errorCode"] == 3);
  fs::remove(out);
}

TEST_CASE("report::format_failure names the root cause first", "[report]") {
  RunRecord run = failed_run();
  WorkerError error;
  error.message = "ValueError: bad batch";
  error.traceback = "Traceback\n  line";
  std::string text = format_failure(run, run.attempts[0], error);
  CHECK_THAT(text, Catch::Contains("train.py FAILED"));
  CHECK_THAT(text, Catch::Contains("rank:       2 (local_rank: 2)"));
  CHECK_THAT(text, Catch::Contains("pid:        4242"));
  CHECK_THAT(text, Catch::Contains("exit code 3"));
  CHECK_THAT(text, Catch::Contains("ValueError: bad batch"));
  CHECK_THAT(text, Catch::Contains("    boom"));
  CHECK_THAT(text,
             Catch::Contains("rank 0 (local_rank 0, pid 4240): stopped by gangrun (SIGTERM)"));
  CHECK(text.find("Root cause") < text.find("Other workers"));
}

TEST_CASE("report::format_failure names the node on many nodes, the host on one", "[report]") {
  RunRecord run = failed_run();
  CHECK_THAT(format_failure(run, run.attempts[0], std::nullopt),
             Catch::Contains("  host:       node1\n"));
  // Every host may have one name: the node rank and the address tell them apart.
  run.host = "vm";
  run.node = "node 1 (vm, 10.0.0.2)";
  std::string text = format_failure(run, run.attempts[0], std::nullopt);
  CHECK_THAT(text, Catch::Contains("  node:       node 1 (vm, 10.0.0.2)\n"));
  CHECK_THAT(text, !Catch::Contains("host:"));
}

TEST_CASE("report::format_failure leads with the rank the failed ones waited for", "[report]") {
  RunRecord run = failed_run();
  AttemptRecord& attempt = run.attempts[0];
  // Worker 1 (rank 2, exit 3) failed first; worker 0 (rank 0) is blamed.
  attempt.first_failure = 1;
  attempt.root_cause = 0;
  SECTION("still running when the others failed") {
    attempt.blame = "rank 0 never reached the collective; ranks 1, 2 timed out waiting";
    std::string text = format_failure(run, attempt, std::nullopt);
    CHECK_THAT(text, Catch::Contains("rank 0 never reached the collective"));
    CHECK_THAT(text, Catch::Contains("Root cause (the rank the failed ranks waited for):"));
    CHECK_THAT(text, Catch::Contains("state:      still running when the others failed; then "
                                     "stopped by gangrun (SIGTERM)"));
    CHECK_THAT(text, Catch::Contains("First failure (the job exits with its code):"));
    CHECK_THAT(text, Catch::Contains("rank:       2 (local_rank: 2, pid 4242)"));
    CHECK_THAT(text, Catch::Contains("exit:       exit code 3"));
    CHECK(text.find("Root cause") < text.find("First failure"));
  }
  SECTION("exited before any other failed") {
    WorkerRecord& left = attempt.workers[0];
    left.signal.reset();
    left.exit_code = 0;
    left.shell_code = 0;
    left.stopped_by_gangrun = false;
    attempt.blame = "rank 0 exited first (with code 0); ranks 1, 2 failed after it";
    std::string text = format_failure(run, attempt, std::nullopt);
    CHECK_THAT(text, Catch::Contains("state:      ended before any other failed: exited with 0"));
    CHECK(text.find("still running") == std::string::npos);
  }
}

TEST_CASE("report::to_json carries workers, root cause and restarts", "[report]") {
  RunRecord run = failed_run();
  nlohmann::json json = to_json(run);
  CHECK(json["exit_code"] == 3);
  CHECK(json["restarts"] == 0);
  CHECK(json["root_cause"]["rank"] == 2);
  CHECK(json["attempts"][0]["workers"][0]["signal"] == "SIGTERM");
  CHECK(json["attempts"][0]["workers"][1]["pid"] == 4242);
}

TEST_CASE("report::describe_worker_end says what happened after gangrun's signal", "[report]") {
  AttemptRecord attempt;
  WorkerRecord worker;
  worker.pid = 10;
  worker.exit_code = 2;
  CHECK(describe_worker_end(worker, attempt) == "exited with 2");
  worker.stopped_by_gangrun = true;
  CHECK(describe_worker_end(worker, attempt) == "exited with 2 after gangrun's SIGTERM");
  worker.exit_code.reset();
  worker.signal = SIGTERM;
  CHECK(describe_worker_end(worker, attempt) == "stopped by gangrun (SIGTERM)");
  worker.signal = SIGKILL;
  CHECK(describe_worker_end(worker, attempt) ==
        "killed by SIGKILL after --term-timeout (it outlived gangrun's SIGTERM)");
  worker.signal = SIGSEGV;
  CHECK(describe_worker_end(worker, attempt) == "killed by SIGSEGV after gangrun's SIGTERM");

  attempt.stopped_by_signal = SIGINT;  // gangrun was interrupted and forwarded SIGINT
  worker.signal = SIGINT;
  CHECK(describe_worker_end(worker, attempt) == "stopped by gangrun (SIGINT)");
  worker.signal = SIGKILL;
  CHECK(describe_worker_end(worker, attempt) == "killed by gangrun's SIGKILL (it outlived SIGINT)");

  worker.stopped_by_gangrun = false;
  worker.signal = SIGABRT;
  CHECK(describe_worker_end(worker, attempt) == "killed by SIGABRT");
  WorkerRecord never;
  never.spawn_error = "fork: Resource temporarily unavailable";
  CHECK(describe_worker_end(never, attempt) ==
        "could not start: fork: Resource temporarily unavailable");
}

TEST_CASE("report::format_failure tells a worker that outlived SIGTERM from one it stopped",
          "[report]") {
  RunRecord run = failed_run();
  run.attempts[0].workers[0].signal.reset();
  run.attempts[0].workers[0].exit_code = 2;
  run.attempts[0].workers[0].shell_code = 2;
  std::string text = format_failure(run, run.attempts[0], std::nullopt);
  CHECK_THAT(text, Catch::Contains("rank 0 (local_rank 0, pid 4240): exited with 2 after "
                                   "gangrun's SIGTERM"));
  CHECK_THAT(text, !Catch::Contains("stopped by gangrun"));

  run.attempts[0].workers[0].stopped_by_gangrun = false;
  text = format_failure(run, run.attempts[0], std::nullopt);
  CHECK_THAT(text, Catch::Contains("pid 4240): failed on its own (exited with 2)"));
}

TEST_CASE("report::format_failure and to_json list incomplete log files", "[report]") {
  RunRecord run = failed_run();
  CHECK_FALSE(incomplete_logs_note(run.attempts[0]));
  run.attempts[0].incomplete_logs = {"/logs/none/attempt_0/0/stdout.log",
                                     "/logs/none/attempt_0/1/stderr.log"};
  CHECK(incomplete_logs_note(run.attempts[0]) ==
        "some log files are incomplete (a write failed): /logs/none/attempt_0/0/stdout.log, "
        "/logs/none/attempt_0/1/stderr.log");
  CHECK_THAT(format_failure(run, run.attempts[0], std::nullopt),
             Catch::Contains("some log files are incomplete (a write failed): "
                             "/logs/none/attempt_0/0/stdout.log"));
  nlohmann::json json = to_json(run);
  CHECK(json["attempts"][0]["incomplete_logs"] ==
        nlohmann::json::array(
            {"/logs/none/attempt_0/0/stdout.log", "/logs/none/attempt_0/1/stderr.log"}));
}

TEST_CASE("report::to_json keeps the root cause's error and says how each worker ended",
          "[report]") {
  RunRecord run = failed_run();
  WorkerError error;
  error.message = "ValueError: bad batch";
  error.traceback = "Traceback (most recent call last):\n  x";
  error.timestamp = "1700000000";
  run.attempts[0].workers[1].error = error;
  nlohmann::json json = to_json(run);
  CHECK(json["root_cause"]["error"]["message"] == "ValueError: bad batch");
  CHECK(json["root_cause"]["error"]["traceback"] == "Traceback (most recent call last):\n  x");
  CHECK(json["root_cause"]["error"]["timestamp"] == "1700000000");
  CHECK(json["root_cause"]["error_file"].is_null());  // a temporary run directory: no path
  CHECK(json["root_cause"]["ended"] == "exited with 3");
  CHECK(json["attempts"][0]["workers"][0]["ended"] == "stopped by gangrun (SIGTERM)");
  CHECK(json["attempts"][0]["workers"][0]["error"].is_null());

  run.attempts[0].workers[1].error_file = "/logs/none/attempt_0/2/error.json";
  CHECK(to_json(run)["root_cause"]["error_file"] == "/logs/none/attempt_0/2/error.json");
}

TEST_CASE("report::json_text and write_report never throw on bytes that are not UTF-8",
          "[report]") {
  RunRecord run = failed_run();
  run.entrypoint = "prog\xff";
  run.attempts[0].workers[1].last_lines = {"bad \xc3\x28 bytes"};
  nlohmann::json worker = nlohmann::json::object();
  worker["argv"] = nlohmann::json::array({"prog", "\xff"});
  run.plan = nlohmann::json::object();
  run.plan["workers"] = nlohmann::json::array({worker});
  std::string text;
  REQUIRE_NOTHROW(text = json_text(to_json(run)));
  nlohmann::json parsed = nlohmann::json::parse(text);  // valid JSON, valid UTF-8
  CHECK(parsed["entrypoint"] == "prog\xef\xbf\xbd");    // U+FFFD
  CHECK(parsed["plan"]["workers"][0]["argv"][1] == "\xef\xbf\xbd");

  fs::path out = temp_file("");
  REQUIRE(write_report(out.string(), run));
  CHECK(nlohmann::json::parse(std::ifstream(out))["entrypoint"] == "prog\xef\xbf\xbd");
  fs::remove(out);
}

TEST_CASE("report::write_report on a full disk fails with the path and the reason", "[report]") {
  // /dev/full fails every write with ENOSPC, as a full filesystem does. The
  // report was written through a buffered stream whose error nobody read:
  // gangrun said nothing, and a full disk kept a 0-byte report.
  RunRecord run = failed_run();
  auto written = write_report("/dev/full", run);
  REQUIRE_FALSE(written);
  CHECK(written.error().code() == gangrun::ErrorCode::io);
  CHECK_THAT(
      written.error().message(),
      Catch::Matchers::Contains("cannot write the report /dev/full: No space left on device"));
}

TEST_CASE("report::write_report replaces a report whole and leaves nothing beside it", "[report]") {
  fs::path dir = fs::temp_directory_path() / ("gangrun-report-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path out = dir / "report.json";
  std::ofstream(out) << "an earlier report\n";
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  RunRecord run = failed_run();
  REQUIRE(write_report(out.string(), run));
  CHECK(nlohmann::json::parse(std::ifstream(out))["exit_code"] == run.exit_code);
  CHECK(fs::status(out).permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  SECTION("a directory that cannot be written keeps the earlier report") {
    auto missing = write_report((dir / "no/such/dir/report.json").string(), run);
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message(),
               Catch::Matchers::Contains("no/such/dir/report.json: No such file or directory"));
  }
  fs::remove_all(dir);
}
