// Layering goes on past a problem (config/layering.hpp): a config file entry
// that does not fit, a file that does not read, Slurm variables that do not
// read and a counter that does not count are each reported, together with the
// values that do not type, in one usage error.
#include "config/layering.hpp"
#include "config/option_names.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::config::Layers;
using gangrun::config::option_row;
using gangrun::config::Problems;
using gangrun::config::test::usage_error;
namespace opt = gangrun::config::opt;

// A JSON config file in a fresh directory, removed at the end of the test.
class JsonFile {
 public:
  explicit JsonFile(const std::string& contents) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("gangrun_layering_problems_" + std::to_string(::getpid()) + "_" +
            std::to_string(++counter));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "job.json").string();
    std::ofstream(path_) << contents;
  }
  ~JsonFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace

TEST_CASE("layering reports every bad config file entry and keeps the good ones",
          "[config][problems]") {
  JsonFile file(R"({"nprocs": 4, "standalone": "yes", "max_restarts": 3, "help": true})");
  Problems problems;
  Layers layers = gangrun::config::layer_values(
      {{.spec = &option_row(opt::config), .spelling = "--config", .text = file.path()}}, {},
      problems);
  gangrun::Expected<void> result = problems.result();
  REQUIRE_FALSE(result);
  const std::string message = result.error().message();
  CHECK_THAT(message, StartsWith("3 problems; nothing was started:"));
  CHECK_THAT(message, Contains(file.path() + ": key \"nprocs\": unknown option"));
  CHECK_THAT(message, Contains(file.path() + ": key \"standalone\": expected true or false"));
  CHECK_THAT(message, Contains(file.path() + ": key \"help\": --help cannot be set"));
  // The entry that fits is still a layer; the one that did not is left to the
  // layers below (here the default).
  CHECK(layers.values.at("max_restarts").text == "3");
  CHECK(layers.values.at("standalone").text == "false");
}

TEST_CASE("a bad config file, a bad variable and a bad command-line value are reported together",
          "[config][problems]") {
  JsonFile file(R"({"master_addr": true})");
  EnvMap env = {{"GANGRUN_CONFIG", file.path()}, {"GANGRUN_MAX_RESTARTS", "lots"}};
  std::string message = usage_error({"--nnodes", "two", "train.py"}, env);
  CHECK_THAT(message, StartsWith("3 problems; nothing was started:"));
  CHECK_THAT(message,
             Contains(file.path() + ": key \"master_addr\": expected a string or a number"));
  CHECK_THAT(message, Contains("GANGRUN_MAX_RESTARTS: 'lots'"));
  CHECK_THAT(message, Contains("--nnodes: 'two' is not a node count"));
}

TEST_CASE("a config file that does not read is one problem among the others",
          "[config][problems]") {
  JsonFile file("{\"nnodes\": 2,\n");
  std::string message = usage_error({"--config", file.path(), "--max_restarts", "lots", "x"});
  CHECK_THAT(message, StartsWith("2 problems; nothing was started:"));
  CHECK_THAT(message, Contains(file.path() + ": not valid JSON: "));
  CHECK_THAT(message, Contains("--max_restarts: 'lots'"));
}

TEST_CASE("Slurm variables that do not read are one problem among the others",
          "[config][problems]") {
  EnvMap env = {{"SLURM_JOB_ID", "41"},
                {"SLURM_STEP_ID", "0"},
                {"SLURM_STEP_NUM_NODES", "3"},
                {"SLURM_STEP_NODELIST", "node[3-1]"},
                {"SLURM_NODEID", "0"},
                {"SLURM_PROCID", "0"},
                {"SLURM_LOCALID", "0"},
                {"SLURM_STEP_NUM_TASKS", "3"},
                {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
                {"PET_COLOR", "sometimes"}};
  std::string message = usage_error({"train.py"}, env);
  CHECK_THAT(message, StartsWith("2 problems; nothing was started:"));
  CHECK_THAT(message, Contains("SLURM_STEP_NODELIST"));
  CHECK_THAT(message, Contains("PET_COLOR: "));
}

TEST_CASE("with a layering problem the checks across options are left out", "[config][problems]") {
  // --include and --exclude together would be refused, but those checks set
  // options against each other, and a value left out could change their
  // verdict: only the file's problem is reported.
  JsonFile file(R"({"nprocs": 4})");
  std::string message =
      usage_error({"--config", file.path(), "--include", "0", "--exclude", "1", "x"});
  CHECK_THAT(message, StartsWith(file.path() + ": key \"nprocs\": unknown option"));
  CHECK_FALSE(message.find("cannot be combined") != std::string::npos);
}

TEST_CASE("one layering problem reads as before", "[config][problems]") {
  JsonFile file(R"({"nprocs": 4})");
  CHECK_THAT(usage_error({"--config", file.path(), "x"}),
             StartsWith(file.path() + ": key \"nprocs\": unknown option"));
}
