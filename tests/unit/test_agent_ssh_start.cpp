// The ssh start: what each host's copy is given, which options it is not
// given again, what it exports, and the dry run.
#include "agent/ssh_start.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::EnvMap;
using gangrun::agent::exported_variables;
using gangrun::agent::remote_arguments;
using gangrun::agent::ssh_command;
using gangrun::config::Options;

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

TEST_CASE("ssh start: the options that place hosts and nodes are not passed on", "[ssh]") {
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

TEST_CASE("ssh start: deepspeed's exported variables, PYTHONPATH with the directory", "[ssh]") {
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

TEST_CASE("ssh start: one command per host, node rank and slots of that host", "[ssh]") {
  Options options = two_hosts();
  auto first = ssh_command(options, 0, "/usr/bin/ssh", "/opt/gangrun", {"prog", "a b"}, "/w d",
                           {{"PATH", "/bin"}});
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

  auto second = ssh_command(options, 1, "ssh", "/opt/gangrun", {"prog"}, "/w", {});
  CHECK_THAT(second.back(), Contains("--node_rank 1"));
  CHECK_THAT(second.back(), Contains("--nproc_per_node 2 --include localhost:1,3 prog"));
  options.accelerator = gangrun::config::Accelerator::cpu;
  auto on_cpus = ssh_command(options, 1, "ssh", "/opt/gangrun", {"prog"}, "/w", {});
  CHECK_THAT(on_cpus.back(), !Contains("--include"));
}

TEST_CASE("ssh start: the dry run lists every host's command", "[ssh]") {
  std::string text = gangrun::agent::ssh_dry_run_text({{"ssh", "node1", "x y"}, {"ssh", "node2"}},
                                                      "-H/--hostfile hosts");
  CHECK_THAT(text, Contains("2 host(s) over ssh, -H/--hostfile hosts, one command per host"));
  CHECK_THAT(text, Contains("  ssh node1 'x y'\n"));
  CHECK_THAT(text, Contains("  ssh node2\n"));
}
