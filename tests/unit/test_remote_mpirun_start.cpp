// The mpirun start: deepspeed's --launcher openmpi and accelerate's
// --mpirun_hostfile choose it, and the mpirun command line gives each host
// a task of its own, in hostfile order, with what the copies need.
#include "config_test_support.hpp"
#include "remote/mpirun_start.hpp"
#include "remote/ssh_start.hpp"
#include "remote/tool_start.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::config::HostSlots;
using gangrun::config::Options;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;
using gangrun::remote::mpirun_command;
using gangrun::remote::remote_arguments;

using Words = std::vector<std::string>;

bool through_mpirun(const Options& options) {
  auto decided = gangrun::remote::starts_through_mpirun(options);
  if (!decided) FAIL(decided.error().message());
  return *decided;
}

struct Hostfile {
  std::filesystem::path dir;
  std::string path;
  explicit Hostfile(const std::string& text) {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("gangrun-mpirun-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
    path = (dir / "hostfile").string();
    std::ofstream(path) << text;
  }
  ~Hostfile() { std::filesystem::remove_all(dir); }
};

Options two_hosts() {
  Options options;
  options.launcher = Options::Launcher::openmpi;
  options.nnodes = 2;
  options.hosts.hosts = {{"node1", {0, 1}}, {"node2", {1, 3}}};
  options.launcher_args = {"--mca", "plm_rsh_agent", "ssh -F /cfg"};
  return options;
}

// The words of the app context of host `index` (contexts split at ':').
Words context(const Words& command, std::size_t index) {
  std::vector<Words> contexts(1);
  for (const std::string& word : command) {
    if (word == ":") {
      contexts.emplace_back();
    } else {
      contexts.back().push_back(word);
    }
  }
  REQUIRE(index < contexts.size());
  return contexts[index];
}

bool has_pair(const Words& words, const std::string& first, const std::string& second) {
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == first && words[i + 1] == second) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("mpirun start: one app context per host, in hostfile order", "[remote][mpirun]") {
  Options options = two_hosts();
  EnvMap exported = {{"PATH", "/usr/bin"}, {"PYTHONPATH", "/job"}};
  Words command =
      mpirun_command(options, "/usr/bin/mpirun", "/opt/gangrun", {"-v", "train.py", "--lr", "1"},
                     "/job", exported, false, std::nullopt);
  CHECK(command.front() == "/usr/bin/mpirun");
  CHECK(std::count(command.begin(), command.end(), ":") == 1);
  CHECK(std::find(command.begin(), command.end(), "--allow-run-as-root") == command.end());

  Words first = context(command, 0);
  CHECK(has_pair(first, "--wdir", "/job"));
  CHECK(has_pair(first, "plm_rsh_agent", "ssh -F /cfg"));  // --launcher_args, before the tasks
  CHECK(has_pair(first, "-np", "1"));
  CHECK(has_pair(first, "--host", "node1"));
  CHECK(has_pair(first, "-x", "MASTER_ADDR=node1"));
  CHECK(has_pair(first, "-x", "MASTER_PORT=29500"));
  // The secret by name: mpirun reads its value, which no command line shows.
  CHECK(has_pair(first, "-x", "GANGRUN_JOB_SECRET"));
  CHECK(has_pair(first, "-x", "PATH=/usr/bin"));
  CHECK(has_pair(first, "/opt/gangrun", "--nproc_per_node"));
  CHECK(has_pair(first, "--nproc_per_node", "2"));
  CHECK(std::find(first.begin(), first.end(), "--include") == first.end());  // ids 0,1
  CHECK(Words(first.end() - 4, first.end()) == Words{"-v", "train.py", "--lr", "1"});

  Words second = context(command, 1);
  CHECK(has_pair(second, "--host", "node2"));
  CHECK(has_pair(second, "-x", "MASTER_ADDR=node1"));  // every task meets at the first host
  CHECK(has_pair(second, "-x", "GANGRUN_JOB_SECRET"));
  CHECK(has_pair(second, "--include", "localhost:1,3"));
  // No node rank on the command line: each task reads its own from mpirun.
  CHECK(std::find(command.begin(), command.end(), "--node_rank") == command.end());

  SECTION("as root, Open MPI is told so") {
    Words as_root =
        mpirun_command(options, "mpirun", "gangrun", {"t.py"}, "/job", {}, true, std::nullopt);
    CHECK(as_root[1] == "--allow-run-as-root");
  }
  SECTION("the user's --master_addr and --master_port") {
    options.master_addr = "10.0.0.9";
    options.master_port = 4000;
    options.origins["master_addr"] = {"10.0.0.9", gangrun::config::Source::command_line};
    Words given =
        mpirun_command(options, "mpirun", "gangrun", {"t.py"}, "/job", {}, false, std::nullopt);
    CHECK(has_pair(given, "-x", "MASTER_ADDR=10.0.0.9"));
    CHECK(has_pair(given, "-x", "MASTER_PORT=4000"));
  }
}

TEST_CASE("mpirun start: the options that choose hosts are not passed on", "[remote][mpirun]") {
  CHECK(remote_arguments({"--mpirun_hostfile", "hf", "--launcher", "openmpi", "--cpu", "t.py"}) ==
        Words{"--cpu", "t.py"});
}

TEST_CASE("mpirun start: chosen by --launcher openmpi and --mpirun_hostfile", "[remote][mpirun]") {
  Hostfile file("node1 slots=2\nnode2 slots=2\n");
  Options deepspeed = launch({"--launcher", "openmpi", "-H", file.path, "train.py"});
  CHECK(deepspeed.launcher == Options::Launcher::openmpi);
  CHECK(deepspeed.nnodes == 2);
  CHECK(deepspeed.hosts.hosts == std::vector<HostSlots>{{"node1", {0, 1}}, {"node2", {0, 1}}});
  CHECK(through_mpirun(deepspeed));

  Options accelerate = launch({"--mpirun_hostfile", file.path, "--cpu", "train.py"});
  CHECK(accelerate.launcher == Options::Launcher::openmpi);
  CHECK(accelerate.hosts.hostfile == file.path);
  CHECK(accelerate.hosts.hosts.size() == 2);
  CHECK(through_mpirun(accelerate));

  SECTION("a hostfile of this host alone still goes through mpirun") {
    Hostfile here("localhost slots=2\n");
    CHECK(through_mpirun(launch({"--launcher", "openmpi", "-H", here.path, "t.py"})));
  }
  SECTION("without a hostfile, or with two, or with another launcher") {
    CHECK_THAT(usage_error({"--launcher", "openmpi", "train.py"}), Contains("-H/--hostfile FILE"));
    CHECK_THAT(usage_error({"--mpirun_hostfile", file.path, "-H", file.path, "train.py"}),
               Contains("both name the hosts"));
    CHECK_THAT(usage_error({"--mpirun_hostfile", file.path, "--launcher", "ssh", "train.py"}),
               Contains("starts gangrun through mpirun, but --launcher ssh"));
  }
  SECTION("deepspeed's other MPI launchers are refused with what to do") {
    std::string message = usage_error({"--launcher", "mvapich", "train.py"});
    CHECK_THAT(message, Contains("--launcher openmpi"));
    CHECK_THAT(message, Contains("PMI_RANK"));
  }
}

TEST_CASE("mpirun start: without a run id every task gets one fresh id, the same for all",
          "[remote][mpirun]") {
  Hostfile file("10.0.0.1 slots=2\n10.0.0.2 slots=2\n");
  EnvMap env = {{"PATH", "/bin"}};
  Words arguments = {"--launcher", "openmpi", "-H", file.path, "train.py"};
  Options options = launch(arguments, env);
  REQUIRE(through_mpirun(options));
  auto run_id = gangrun::remote::run_id_for_hosts(options);
  REQUIRE(run_id);
  CHECK(run_id->fresh);
  CHECK(run_id->value != "none");
  auto again = gangrun::remote::run_id_for_hosts(options);
  REQUIRE(again);
  CHECK(again->value != run_id->value);  // drawn anew for each job

  Words command = mpirun_command(options, "mpirun", "gangrun", remote_arguments(arguments), "/job",
                                 {}, false, run_id->value);
  for (std::size_t host = 0; host < 2; ++host) {
    Words words = context(command, host);
    CHECK(has_pair(words, "--rdzv_id", run_id->value));
    CHECK(std::count(words.begin(), words.end(), "--rdzv_id") == 1);
  }
  auto dry_run = gangrun::remote::mpirun_dry_run_for(options, arguments, env);
  REQUIRE(dry_run);
  CHECK_THAT(*dry_run, Contains("--rdzv_id run-"));
  CHECK_THAT(*dry_run, Contains("was drawn for this dry run"));

  SECTION("the user's on the command line travels in the arguments alone") {
    Words given = {"--rdzv_id", "exp-7", "--launcher", "openmpi", "-H", file.path, "train.py"};
    Options user = launch(given, env);
    CHECK_FALSE(gangrun::remote::run_id_for_hosts(user));
    Words kept = mpirun_command(user, "mpirun", "gangrun", remote_arguments(given), "/job", {},
                                false, std::nullopt);
    CHECK(has_pair(context(kept, 1), "--rdzv_id", "exp-7"));
    CHECK(std::count(kept.begin(), kept.end(), "--rdzv_id") == 2);  // once per host
  }
}
