// The ssh start: what each host's copy is given, which options it is not
// given again, what it exports, and the dry run.
#include "config_test_support.hpp"
#include "remote/ssh_start.hpp"
#include "remote/tool_start.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::remote::exported_variables;
using gangrun::remote::remote_arguments;
using gangrun::remote::ssh_command;

Options two_hosts() {
  Options options;
  options.launcher = Options::Launcher::ssh;
  options.nnodes = 2;
  options.hosts.hosts = {{"node1", {0, 1}}, {"node2", {1, 3}}};
  options.hosts.ssh_port = 2222;
  options.launcher_args = {"-F", "/cfg"};
  return options;
}

}  // namespace

TEST_CASE("ssh start: the options that place hosts and nodes are not passed on", "[remote][ssh]") {
  std::vector<std::string> arguments = {"-H",         "hf",   "--include=node1",
                                        "--num_gpus", "2",    "--ssh-port",
                                        "22",         "-v",   "--no_python",
                                        "--launcher", "ssh",  "--master_port",
                                        "1234",       "prog", "-H",
                                        "--include",  "x"};
  CHECK(remote_arguments(arguments) ==
        std::vector<std::string>{"-v", "--no_python", "prog", "-H", "--include", "x"});
  CHECK(remote_arguments({"--", "prog", "--nnodes", "3"}) ==
        std::vector<std::string>{"--", "prog", "--nnodes", "3"});
}

TEST_CASE("ssh start: deepspeed's exported variables, PYTHONPATH with the directory",
          "[remote][ssh]") {
  EnvMap env = {{"PATH", "/bin"},     {"NCCL_DEBUG", "INFO"}, {"PYTHONPATH", "/lib"},
                {"HOME", "/root"},    {"UCX_TLS", "tcp"},     {"MLFLOW_URI", "x"},
                {"SECRET_TOKEN", "s"}};
  EnvMap exported = exported_variables(env, "/work");
  CHECK(exported == EnvMap{{"PATH", "/bin"},
                           {"NCCL_DEBUG", "INFO"},
                           {"PYTHONPATH", "/work:/lib"},
                           {"UCX_TLS", "tcp"},
                           {"MLFLOW_URI", "x"}});
  CHECK(exported_variables({}, "/w") == EnvMap{{"PYTHONPATH", "/w"}});
}

TEST_CASE("ssh start: one command per host, node rank and slots of that host", "[remote][ssh]") {
  Options options = two_hosts();
  auto first = ssh_command(options, 0, "/usr/bin/ssh", "/opt/gangrun", {"prog", "a b"}, "/w d",
                           {{"PATH", "/bin"}}, std::nullopt);
  REQUIRE(first.size() == 10);
  // "--": a host whose name starts with '-' is never an option of ssh.
  CHECK(std::vector<std::string>(first.begin(), first.begin() + 9) ==
        std::vector<std::string>{"/usr/bin/ssh", "-o", "BatchMode=yes", "-p", "2222", "-F", "/cfg",
                                 "--", "node1"});
  const std::string& script = first.back();
  CHECK_THAT(script, Contains("sh -c "));
  // The job's secret comes as the first line of stdin, never on the command line.
  CHECK_THAT(script, StartsWith("sh -c 'IFS= read -r GANGRUN_JOB_SECRET"));
  CHECK_THAT(script, Contains("/w d"));
  CHECK_THAT(script, Contains("/opt/gangrun --launcher local --nnodes 2 --node_rank 0 "
                              "--master_addr node1 --master_port 29500 --nproc_per_node 2 prog"));
  CHECK_THAT(script, Contains("a b"));
  CHECK_THAT(script, Contains("PATH=/bin"));
  CHECK_THAT(script, Contains("cat <&3; kill -TERM $p"));

  auto second = ssh_command(options, 1, "ssh", "/opt/gangrun", {"prog"}, "/w", {}, std::nullopt);
  CHECK_THAT(second.back(), Contains("--node_rank 1"));
  CHECK_THAT(second.back(), Contains("--nproc_per_node 2 --include localhost:1,3 prog"));
  options.accelerator = gangrun::config::Accelerator::cpu;
  auto on_cpus = ssh_command(options, 1, "ssh", "/opt/gangrun", {"prog"}, "/w", {}, std::nullopt);
  CHECK_THAT(on_cpus.back(), !Contains("--include"));
}

TEST_CASE("ssh start: the dry run lists every host's command", "[remote][ssh]") {
  std::string text = gangrun::remote::ssh_dry_run_text({{"ssh", "node1", "x y"}, {"ssh", "node2"}},
                                                       "-H/--hostfile hosts", "");
  CHECK_THAT(text, Contains("2 host(s) over ssh, -H/--hostfile hosts, one command per host"));
  CHECK_THAT(text, Contains("  ssh node1 'x y'\n"));
  CHECK_THAT(text, Contains("  ssh node2\n"));
}

TEST_CASE("ssh start: a PBS job's hosts print the job line every dry run prints",
          "[remote][ssh][schedulers]") {
  Options options = two_hosts();
  gangrun::schedulers::Job pbs;
  pbs.system = "PBS";
  pbs.start = gangrun::schedulers::Start::first_node;
  pbs.job_id = {.value = "1742.pbs-server", .variable = "PBS_JOBID", .text = "1742.pbs-server"};
  pbs.hosts_origin = "PBS_NODEFILE=/aux/1742";
  options.job = pbs;
  std::string line = gangrun::remote::hosts_job_line(options);
  CHECK(line ==
        "  job:        PBS job 1742.pbs-server, node 0 of 2, hosts from PBS_NODEFILE=/aux/1742\n");
  std::string text = gangrun::remote::ssh_dry_run_text(
      {{"ssh", "node1"}, {"ssh", "node2"}}, gangrun::remote::hosts_origin(options), line);
  CHECK_THAT(text, Contains("over ssh, the hosts of PBS job 1742.pbs-server "
                            "(PBS_NODEFILE=/aux/1742), one command per host:\n" +
                            line + "  ssh node1\n"));

  options.hosts.hostfile = "hosts";  // a hostfile's hosts are no job's
  CHECK(gangrun::remote::hosts_job_line(options).empty());
}

namespace {

// Every "--rdzv_id ID" in the commands of a dry run (its lines that start
// with two spaces), one per host's command.
std::vector<std::string> run_ids_in(const std::string& text) {
  std::vector<std::string> ids;
  static const std::regex k_run_id("--rdzv_id ([A-Za-z0-9._-]+)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  ")) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), k_run_id), end; it != end; ++it) {
      ids.push_back((*it)[1].str());
    }
  }
  return ids;
}

}  // namespace

TEST_CASE("ssh start: without a run id every host gets one fresh id, the same for all",
          "[remote][ssh]") {
  using gangrun::config::test::launch;
  using gangrun::remote::ssh_dry_run_for;
  gangrun::test::TempDir dir;
  std::string hostfile =
      dir.write("hostfile", "10.0.0.1 slots=2\n10.0.0.2 slots=2\n10.0.0.3 slots=2\n");
  EnvMap env = {{"PATH", "/bin"}};
  std::vector<std::string> arguments = {"-H", hostfile, "train.py"};
  Options options = launch(arguments, env);
  REQUIRE(options.launcher == Options::Launcher::ssh);
  REQUIRE(options.rdzv_id == "none");  // torchrun's default, every such job's

  auto first = ssh_dry_run_for(options, arguments, env);
  REQUIRE(first);
  std::vector<std::string> ids = run_ids_in(*first);
  REQUIRE(ids.size() == 3);
  CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == 1);  // shared
  CHECK(ids[0] != "none");
  CHECK_THAT(ids[0], StartsWith("run-"));
  CHECK_THAT(*first, Contains("(The run id " + ids[0] + " was drawn for this dry run"));
  auto second = ssh_dry_run_for(options, arguments, env);
  REQUIRE(second);
  REQUIRE(run_ids_in(*second).size() == 3);
  CHECK(run_ids_in(*second)[0] != ids[0]);  // fresh for each job

  SECTION("the user's on the command line travels in the arguments, once") {
    std::vector<std::string> given = {"--rdzv_id", "exp-7", "-H", hostfile, "train.py"};
    auto text = ssh_dry_run_for(launch(given, env), given, env);
    REQUIRE(text);
    CHECK(run_ids_in(*text) == std::vector<std::string>(3, "exp-7"));
    CHECK_THAT(*text, !Contains("was drawn"));
  }
  SECTION("the user's from this host's environment is passed on") {
    EnvMap with_id = env;
    with_id["GANGRUN_RDZV_ID"] = "exp-8";
    auto text = ssh_dry_run_for(launch(arguments, with_id), arguments, with_id);
    REQUIRE(text);
    CHECK(run_ids_in(*text) == std::vector<std::string>(3, "exp-8"));
  }
  SECTION("a run id from the job script's scheduler is kept") {
    Options pbs = options;
    pbs.rdzv_id = "1742.pbs-server";
    pbs.origins["rdzv_id"] = {"1742.pbs-server (PBS_JOBID=1742.pbs-server)",
                              gangrun::config::Source::scheduler};
    auto kept = gangrun::remote::run_id_for_hosts(pbs);
    REQUIRE(kept);
    CHECK(kept->value == "1742.pbs-server");
    CHECK_FALSE(kept->fresh);
  }
}
