#include "report/error_file.hpp"
#include "report/failure_summary.hpp"
#include "report/run_report.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

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
  CHECK_THAT(text, Catch::Contains("stopped by gangrun (killed by signal 15 (SIGTERM))"));
  CHECK(text.find("Root cause") < text.find("Other workers"));
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
