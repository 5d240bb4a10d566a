// Where values come from: command line > GANGRUN_<NAME> > PET_<NAME> >
// --config file > defaults, with Options::origins recording each one, and
// every way a config file can be wrong.
#include "config/cli.hpp"
#include "config/config_file.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::ErrorCode;
using gangrun::Expected;
using gangrun::config::Command;
using gangrun::config::Options;
using gangrun::config::Source;

using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

// A file in a fresh directory, removed with it at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& contents, const std::string& name = "gangrun.json") {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("gangrun_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(++counter));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_) << contents;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace

TEST_CASE("config::parse_command_line layers CLI over GANGRUN_ over PET_ over file over default",
          "[config]") {
  TempFile file(R"({"nnodes": 5, "node_rank": 4, "master_port": 1111, "master-addr": "file",
                    "max_restarts": 7, "role": "trainer"})");
  EnvMap env = {{"GANGRUN_NNODES", "4"},        {"PET_NNODES", "3"},
                {"GANGRUN_NODE_RANK", "3"},     {"PET_NODE_RANK", "2"},
                {"PET_MASTER_PORT", "2222"},    {"PET_MASTER_ADDR", "pet"},
                {"GANGRUN_MASTER_ADDR", "env"}, {"GANGRUN_CONFIG", file.path()}};
  Options o = launch({"--nnodes", "6", "x"}, env);

  CHECK(o.nnodes == 6);  // command line
  CHECK(o.origins.at("nnodes").source == Source::command_line);
  CHECK(o.origins.at("nnodes").text == "6");
  CHECK(o.node_rank == 3);  // GANGRUN_ beats PET_ and the file
  CHECK(o.origins.at("node_rank").source == Source::gangrun_env);
  CHECK(o.master_addr == "env");
  CHECK(o.master_port == 2222);  // PET_ beats the file
  CHECK(o.origins.at("master_port").source == Source::pet_env);
  CHECK(o.max_restarts == 7);  // the file beats the default
  CHECK(o.origins.at("max_restarts").source == Source::json_config);
  CHECK(o.role == "trainer");
  CHECK(o.term_timeout == 30.0);  // the default
  CHECK(o.origins.at("term_timeout").source == Source::default_value);
  CHECK(o.json_config_file == file.path());
  CHECK(o.origins.at("config").source == Source::gangrun_env);
}

TEST_CASE("config::parse_command_line reads torchrun's PET_ variables", "[config]") {
  Options o = launch({"x"}, {{"PET_NPROC_PER_NODE", "4"},
                             {"PET_NNODES", "2"},
                             {"PET_NODE_RANK", "1"},
                             {"PET_MASTER_ADDR", "job-master-0"},
                             {"PET_MASTER_PORT", "23456"}});
  CHECK(o.nproc_per_node->number == 4);
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.master_addr == "job-master-0");
  CHECK(o.master_port == 23456);
  CHECK(o.origins.at("nproc_per_node").source == Source::pet_env);
}

TEST_CASE("config::parse_command_line names the variable a bad value came from", "[config]") {
  CHECK_THAT(usage_error({"x"}, {{"GANGRUN_NPROC_PER_NODE", "abc"}}),
             StartsWith("GANGRUN_NPROC_PER_NODE: 'abc' is not a positive number"));
  CHECK_THAT(usage_error({"x"}, {{"PET_MASTER_PORT", "0x10"}}),
             StartsWith("PET_MASTER_PORT: '0x10' is not a port number"));
  CHECK_THAT(usage_error({"x"}, {{"GANGRUN_STANDALONE", "maybe"}}),
             StartsWith("GANGRUN_STANDALONE: 'maybe' is not a boolean"));
  // A bad lower layer does not matter when a higher one wins.
  CHECK(launch({"--nnodes", "1", "x"}, {{"PET_NNODES", "junk"}}).nnodes == 1);
}

TEST_CASE("config::parse_command_line reads flags from the environment", "[config]") {
  for (std::string yes : {"1", "true", "YES", "on"}) {
    CHECK(launch({"x"}, {{"GANGRUN_DRY_RUN", yes}}).dry_run);
  }
  for (std::string no : {"0", "false", "No", "off", ""}) {
    Options o = launch({"x"}, {{"GANGRUN_STANDALONE", no}, {"PET_STANDALONE", "1"}});
    CHECK_FALSE(o.standalone);
    CHECK(o.origins.at("standalone").source == Source::gangrun_env);
  }
  CHECK(launch({"x"}, {{"PET_STANDALONE", "1"}}).standalone);
}

TEST_CASE("config::parse_command_line treats an empty variable as unset for valued options",
          "[config]") {
  Options o = launch({"x"}, {{"GANGRUN_NNODES", ""}, {"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}});
  CHECK(o.nnodes == 2);
}

TEST_CASE("config::parse_command_line reads a config file in either spelling", "[config]") {
  TempFile file(R"({"nproc-per-node": "gpu", "num_gpus": 2, "standalone": true,
                    "dry_run": true, "term-timeout": 2.5, "signals_to_handle": "TERM",
                    "redirects": 3, "verbose": 2, "log_prefix": "", "python": "py"})");
  Options o = launch({"--config", file.path(), "x"});
  CHECK(o.nproc_per_node->kind == gangrun::config::ProcCount::Kind::gpu);
  CHECK(o.num_gpus == 2);
  CHECK(o.standalone);
  CHECK(o.dry_run);
  CHECK(o.term_timeout == 2.5);
  CHECK(o.signals_to_handle == std::vector<int>{SIGTERM});
  CHECK(o.redirects.all.out);
  CHECK(o.verbosity == 2);
  CHECK(o.log_prefix == "");
  CHECK(o.python == "py");
  CHECK(o.origins.at("term_timeout").text == "2.5");
  CHECK(o.origins.at("config").source == Source::command_line);
  // --config beats GANGRUN_CONFIG, which beats PET_CONFIG.
  TempFile other(R"({"nnodes": 9})");
  CHECK(launch({"--config=" + file.path(), "x"}, {{"GANGRUN_CONFIG", other.path()}}).nnodes == 1);
  CHECK(launch({"x"}, {{"GANGRUN_CONFIG", file.path()}, {"PET_CONFIG", other.path()}}).standalone);
  CHECK(launch({"x"}, {{"PET_CONFIG", other.path()}}).nnodes == 9);
}

TEST_CASE("config::parse_command_line reads accelerate's names from a config file", "[config]") {
  TempFile file(R"({"num_machines": 2, "machine_rank": 1, "main_process_ip": "10.1.1.1",
                    "main_process_port": 29501, "num_processes": 16})");
  Options o = launch({"--config", file.path(), "x"});
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.master_addr == "10.1.1.1");
  CHECK(o.master_port == 29501);
  CHECK(o.num_processes == 16);
}

TEST_CASE("config::parse_command_line rejects bad config files", "[config]") {
  SECTION("unreadable") {
    TempFile dir("{}");
    std::string missing = dir.dir() + "/nope.json";
    std::string message = usage_error({"--config", missing, "x"});
    CHECK_THAT(message, StartsWith(missing + ": cannot read the config file"));
    CHECK_THAT(message, Contains("No such file"));
    CHECK_THAT(usage_error({"--config", dir.dir(), "x"}), Contains("is a directory"));
    CHECK_THAT(usage_error({"x"}, {{"PET_CONFIG", missing}}), StartsWith(missing + ": "));
  }
  SECTION("malformed JSON") {
    TempFile file("{\"nnodes\": 2,\n");
    std::string message = usage_error({"--config", file.path(), "x"});
    CHECK_THAT(message, StartsWith(file.path() + ": not valid JSON: "));
    CHECK_THAT(message, Contains("line 2"));
  }
  SECTION("not an object") {
    TempFile file("[1, 2]");
    CHECK_THAT(usage_error({"--config", file.path(), "x"}),
               StartsWith(file.path() + ": expected a JSON object"));
  }
  SECTION("unknown key") {
    TempFile file(R"({"nnodes": 2, "nprocs": 4})");
    CHECK_THAT(usage_error({"--config", file.path(), "x"}),
               StartsWith(file.path() + ": key \"nprocs\": unknown option"));
  }
  SECTION("wrong type") {
    TempFile list(R"({"nnodes": [2]})");
    CHECK_THAT(usage_error({"--config", list.path(), "x"}),
               StartsWith(list.path() + ": key \"nnodes\": expected a string, number or boolean"));
    TempFile flag(R"({"standalone": "yes"})");
    CHECK_THAT(usage_error({"--config", flag.path(), "x"}),
               StartsWith(flag.path() + ": key \"standalone\": expected true or false"));
    TempFile value(R"({"master_addr": true})");
    CHECK_THAT(usage_error({"--config", value.path(), "x"}),
               StartsWith(value.path() + ": key \"master_addr\": expected a string or a number"));
  }
  SECTION("bad value") {
    TempFile file(R"({"master-port": 70000})");
    CHECK(usage_error({"--config", file.path(), "x"}) ==
          file.path() +
              ": key \"master-port\": '70000' is not a port number (expected 1..65535, or 0 for "
              "a free port)");
  }
  SECTION("keys that cannot be in a file") {
    TempFile help(R"({"help": true})");
    CHECK_THAT(usage_error({"--config", help.path(), "x"}), Contains("cannot be set in a config"));
    TempFile config(R"({"config": "other.json"})");
    CHECK_THAT(usage_error({"--config", config.path(), "x"}),
               Contains("cannot be set in a config"));
    TempFile twice(R"({"nnodes": 2, "num_machines": 2})");
    CHECK_THAT(usage_error({"--config", twice.path(), "x"}),
               StartsWith(twice.path() + ": key \"num_machines\": sets --nnodes again"));
  }
}

TEST_CASE("config::load_config_file reads only a bounded regular file", "[config]") {
  SECTION("a device without end is refused by its type, without reading it") {
    auto loaded = gangrun::config::load_config_file("/dev/zero");
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code() == ErrorCode::usage);
    CHECK(loaded.error().message() ==
          "/dev/zero: cannot read the config file: it is a character device; --config reads "
          "JSON from a regular file");
  }
  SECTION("a FIFO without a writer is refused at once instead of blocking") {
    TempFile dir("{}");
    std::string fifo = dir.dir() + "/pipe.json";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(usage_error({"--config", fifo, "x"}),
               Equals(fifo + ": cannot read the config file: it is a FIFO (named pipe); --config "
                             "reads JSON from a regular file"));
  }
  SECTION("a directory") {
    TempFile dir("{}");
    CHECK_THAT(usage_error({"--config", dir.dir(), "x"}),
               Equals(dir.dir() + ": cannot read the config file: it is a directory; --config "
                                  "reads JSON from a regular file"));
  }
  SECTION("a file over the limit") {
    std::string big =
        "{\"nnodes\": 1" + std::string(gangrun::config::k_max_config_bytes, ' ') + "}";
    TempFile file(big);
    CHECK_THAT(usage_error({"--config", file.path(), "x"}),
               Equals(file.path() +
                      ": cannot read the config file: it is larger than 1024 KiB; a config file "
                      "holds a few option values"));
  }
  SECTION("a file just under the limit is read") {
    std::string padded =
        "{\"nnodes\": 1" + std::string(gangrun::config::k_max_config_bytes - 20, ' ') + "}";
    TempFile file(padded);
    CHECK(launch({"--config", file.path(), "x"}).nnodes == 1);
  }
}

TEST_CASE("config::parse_config_text keeps the file's key order", "[config]") {
  auto entries = gangrun::config::parse_config_text(R"({"b": 1, "a": "x", "c": false})", "f");
  REQUIRE(entries);
  REQUIRE(entries->size() == 3);
  CHECK((*entries)[0].key == "b");
  CHECK((*entries)[0].text == "1");
  CHECK((*entries)[1].text == "x");
  CHECK((*entries)[2].text == "false");
}

TEST_CASE("config::load_config_file refuses a NUL in any key or string", "[config]") {
  const std::string why =
      ": the value contains a NUL character; remove it (an argument, a path or an environment "
      "variable would end at it and silently lose the rest)";
  SECTION("master_addr would have become 127.0.0.1") {
    TempFile file(R"({"nnodes": 1, "master_addr": "127.0.0.1\u0000.evil.com"})");
    CHECK_THAT(usage_error({"--config", file.path(), "x"}),
               Equals(file.path() + ": key \"master_addr\"" + why));
  }
  SECTION("a path") {
    TempFile file(R"({"log_dir": "logs\u0000/../elsewhere"})");
    CHECK_THAT(usage_error({"--config", file.path(), "x"}),
               Equals(file.path() + ": key \"log_dir\"" + why));
  }
  SECTION("a key, shown with the NUL written out") {
    auto entries = gangrun::config::parse_config_text(R"({"nnodes\u0000x": 1})", "f.json");
    REQUIRE_FALSE(entries);
    CHECK_THAT(entries.error().message(),
               StartsWith("f.json: key \"nnodes\\0x\": the key contains a NUL character"));
  }
  SECTION("other control characters reach the option as written") {
    auto entries = gangrun::config::parse_config_text(R"({"master_addr": "a\tb"})", "f.json");
    REQUIRE(entries);
    CHECK((*entries)[0].text == "a\tb");
  }
}
