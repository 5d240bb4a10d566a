// The run directory's layout (launch/run_directory.hpp), which every other
// file asks for instead of spelling it.
#include "launch/run_directory.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

namespace gangrun::launch {
namespace {

TEST_CASE("the run directory's layout is attempt_<n>/<local_rank>/ and its files",
          "[launch][run_directory]") {
  CHECK(RunDirectory::attempt_path("/run", 3) == "/run/attempt_3");
  CHECK(RunDirectory::worker_path("/run", 3, 1) == "/run/attempt_3/1");
  CHECK(RunDirectory::error_file("/run", 0, 2) == "/run/attempt_0/2/error.json");
  CHECK(RunDirectory::log_file("/run/attempt_0/2", false) == "/run/attempt_0/2/stdout.log");
  CHECK(RunDirectory::log_file("/run/attempt_0/2", true) == "/run/attempt_0/2/stderr.log");
}

TEST_CASE("the planned path is the pattern create() fills in", "[launch][run_directory]") {
  CHECK(RunDirectory::planned_path(std::nullopt, "/tmp", "job/1") == "/tmp/gangrun-job_1_XXXXXX");
  CHECK(RunDirectory::planned_path("/logs", "/tmp", "job") == "/logs/job_XXXXXX");

  test::TempDir dir;
  auto made = RunDirectory::create(std::nullopt, dir.path().string(), "job");
  REQUIRE(made);
  std::string planned = RunDirectory::planned_path(std::nullopt, dir.path().string(), "job");
  CHECK(made->path().size() == planned.size());
  CHECK(made->path().substr(0, planned.size() - 6) == planned.substr(0, planned.size() - 6));
  REQUIRE(made->prepare_attempt(2, 2));
  CHECK(std::filesystem::is_directory(RunDirectory::worker_path(made->path(), 2, 1)));
  CHECK(made->attempt_path(2) == RunDirectory::attempt_path(made->path(), 2));
}

}  // namespace
}  // namespace gangrun::launch
