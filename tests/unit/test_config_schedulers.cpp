// The layer of PBS, LSF, Kubeflow's PyTorchJob and SkyPilot: each system's
// variables exactly as it sets them, the options they give and where each
// came from, the hosts a job script starts gangrun on, and each bad input.
#include "config/option_names.hpp"
#include "config_test_support.hpp"
#include "schedulers/readers.hpp"
#include "util/host.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::config::Options;
using gangrun::config::Source;
using gangrun::config::test::launch;
using gangrun::config::test::usage_error;
namespace schedulers = gangrun::schedulers;

std::string origin_text(const Options& o, const std::string& name) {
  auto it = o.origins.find(name);
  REQUIRE(it != o.origins.end());
  CHECK(it->second.source == Source::scheduler);
  return it->second.text;
}

// A node file in a directory of its own, removed with the object.
struct NodeFile {
  std::filesystem::path path;
  explicit NodeFile(const std::string& text) {
    path = std::filesystem::temp_directory_path() /
           ("gangrun-node-file-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::ofstream(path) << text;
  }
  ~NodeFile() { std::filesystem::remove(path); }
  NodeFile(const NodeFile&) = delete;
  NodeFile& operator=(const NodeFile&) = delete;
};

// What a PyTorchJob's worker pod 1 of a master and two workers holds
// (training-operator v1: the master is rank 0, worker i is rank i+1).
EnvMap pytorch_job_pod() {
  return {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
          {"KUBERNETES_SERVICE_PORT", "443"},
          {"PYTHONUNBUFFERED", "0"},
          {"MASTER_ADDR", "mnist-master-0"},
          {"MASTER_PORT", "23456"},
          {"WORLD_SIZE", "3"},
          {"RANK", "2"}};
}

// SkyPilot's run section on the second of two nodes with 4 GPUs each.
EnvMap skypilot_node() {
  return {{"SKYPILOT_NODE_RANK", "1"},
          {"SKYPILOT_NODE_IPS", "172.31.5.10\n172.31.5.11\n"},
          {"SKYPILOT_NUM_NODES", "2"},
          {"SKYPILOT_NUM_GPUS_PER_NODE", "4"},
          {"SKYPILOT_TASK_ID", "sky-2026-11-26-23-59-59-000001_train_1"}};
}

}  // namespace

TEST_CASE("a PyTorchJob pod's variables give its node rank, the master and its port",
          "[config][schedulers]") {
  Options o = launch({"--accelerator", "cpu", "train.py"}, pytorch_job_pod());
  CHECK(o.nnodes == 3);
  CHECK(o.node_rank == 2);
  CHECK(o.master_addr == "mnist-master-0");
  CHECK(o.master_port == 23456);
  CHECK(o.rdzv_id == "mnist-master-0");
  REQUIRE(o.job);
  CHECK_FALSE(o.job->is_slurm());
  CHECK(o.job->system == "Kubeflow PyTorchJob");
  CHECK(origin_text(o, "nnodes") == "3 (WORLD_SIZE=3)");
  CHECK(origin_text(o, "node_rank") == "2 (RANK=2)");
  CHECK(origin_text(o, "master_addr") ==
        "mnist-master-0 (the head node: MASTER_ADDR=mnist-master-0)");
  CHECK(o.user_origin(gangrun::config::opt::nnodes) == nullptr);

  SECTION("newer operators' PET_* variables are a layer above, and WORLD_SIZE counts workers") {
    EnvMap env = pytorch_job_pod();
    env["WORLD_SIZE"] = "12";
    env["PET_NNODES"] = "3";
    env["PET_NODE_RANK"] = "2";
    env["PET_NPROC_PER_NODE"] = "4";
    Options pet = launch({"--accelerator", "cpu", "train.py"}, env);
    CHECK(pet.nnodes == 3);
    CHECK(pet.node_rank == 2);
    CHECK(pet.nproc_per_node->number == 4);
    CHECK(pet.master_port == 23456);
  }
  SECTION("outside Kubernetes MASTER_ADDR and RANK are not a job") {
    EnvMap env = pytorch_job_pod();
    env.erase("KUBERNETES_SERVICE_HOST");
    CHECK_FALSE(launch({"train.py"}, env).job);
  }
  SECTION("the user's values win") {
    Options given = launch({"--master_addr", "10.0.0.9", "--master_port", "1234", "train.py"},
                           pytorch_job_pod());
    CHECK(given.master_addr == "10.0.0.9");
    CHECK(given.master_port == 1234);
    CHECK(given.nnodes == 3);
    // --standalone is one node of its own: the job's values all stand back.
    CHECK(launch({"--standalone", "train.py"}, pytorch_job_pod()).nnodes == 1);
  }
  SECTION("bad input names the variable") {
    EnvMap env = pytorch_job_pod();
    env["RANK"] = "3";
    CHECK_THAT(usage_error({"train.py"}, env), Contains("RANK=3 is not a node of WORLD_SIZE=3"));
    env["RANK"] = "two";
    CHECK_THAT(usage_error({"train.py"}, env), Contains("RANK=two: expected a count"));
    env.erase("RANK");
    CHECK_THAT(usage_error({"train.py"}, env), Contains("sets RANK (this pod's index)"));
  }
}

TEST_CASE("SkyPilot's variables give the node rank, the head and the GPUs per node",
          "[config][schedulers]") {
  Options o = launch({"train.py"}, skypilot_node());
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.master_addr == "172.31.5.10");
  CHECK_FALSE(o.master_port);  // SkyPilot gives none: gangrun's default
  REQUIRE(o.nproc_per_node);
  CHECK(o.nproc_per_node->number == 4);
  CHECK(o.rdzv_id == "sky-2026-11-26-23-59-59-000001_train_1");
  CHECK(origin_text(o, "master_addr") ==
        "172.31.5.10 (the head node: the first of SKYPILOT_NODE_IPS)");
  CHECK(origin_text(o, "nproc_per_node") == "4 (SKYPILOT_NUM_GPUS_PER_NODE=4)");

  SECTION("a CPU cluster's zero GPUs leave the workers per node alone") {
    EnvMap env = skypilot_node();
    env["SKYPILOT_NUM_GPUS_PER_NODE"] = "0";
    CHECK_FALSE(launch({"train.py"}, env).nproc_per_node);
  }
  SECTION("without SKYPILOT_NUM_NODES the addresses are counted") {
    EnvMap env = skypilot_node();
    env.erase("SKYPILOT_NUM_NODES");
    Options counted = launch({"train.py"}, env);
    CHECK(counted.nnodes == 2);
    CHECK_THAT(origin_text(counted, "nnodes"), Contains("SKYPILOT_NODE_IPS (2 lines)"));
  }
  SECTION("bad input names the variable") {
    EnvMap env = skypilot_node();
    env["SKYPILOT_NUM_NODES"] = "3";
    CHECK_THAT(usage_error({"train.py"}, env),
               Contains("SKYPILOT_NODE_IPS (2 lines) does not match SKYPILOT_NUM_NODES=3"));
    env = skypilot_node();
    env.erase("SKYPILOT_NODE_IPS");
    CHECK_THAT(usage_error({"train.py"}, env),
               Contains("SKYPILOT_NODE_RANK=1 is set but SKYPILOT_NODE_IPS is not"));
  }
}

TEST_CASE("a PBS job script starts gangrun on the node file's hosts over ssh",
          "[config][schedulers]") {
  std::string me = gangrun::host::host_name();
  NodeFile nodes(me + "\n" + me + "\nnode-b\nnode-b\n");
  EnvMap env = {{"PBS_JOBID", "1742.pbs-server"},
                {"PBS_NODEFILE", nodes.path.string()},
                {"PBS_ENVIRONMENT", "PBS_BATCH"},
                {"PBS_O_WORKDIR", "/home/user"}};
  Options o = launch({"train.py"}, env);
  CHECK(o.launcher == Options::Launcher::ssh);
  REQUIRE(o.hosts.hosts.size() == 2);
  CHECK(o.hosts.hosts[0].host == me);
  CHECK(o.hosts.hosts[0].slots == std::vector<int>{0, 1});
  CHECK(o.hosts.hosts[1].host == "node-b");
  CHECK(o.nnodes == 2);
  CHECK(o.rdzv_id == "1742.pbs-server");
  CHECK(origin_text(o, "nnodes") == "2 (PBS_NODEFILE=" + nodes.path.string() + ")");

  SECTION("--nproc_per_node sets the workers on every host") {
    Options given = launch({"--nproc_per_node", "4", "train.py"}, env);
    CHECK(given.hosts.hosts[1].slots == std::vector<int>{0, 1, 2, 3});
  }
  SECTION("--launcher local runs here alone") {
    Options local = launch({"--launcher", "local", "train.py"}, env);
    CHECK(local.hosts.hosts.empty());
    CHECK_FALSE(local.job);
  }
  SECTION("a node file that does not name this host") {
    NodeFile others("node-a\nnode-b\n");
    env["PBS_NODEFILE"] = others.path.string();
    std::string error = usage_error({"train.py"}, env);
    CHECK_THAT(error, Contains("gangrun runs on " + me +
                               ", and PBS_NODEFILE=" + others.path.string() + " does not list it"));
    CHECK_THAT(error, Contains("run gangrun in the PBS job script"));
  }
  SECTION("a node file that names this host twice") {
    NodeFile twice(me + "\n" + me + ".cluster.example\n");
    env["PBS_NODEFILE"] = twice.path.string();
    CHECK_THAT(usage_error({"train.py"}, env),
               Contains("lists it 2 times (" + me + ", " + me + ".cluster.example)"));
  }
  SECTION("a missing node file") {
    env["PBS_NODEFILE"] = "/nonexistent/aux/1742.pbs-server";
    CHECK_THAT(usage_error({"train.py"}, env),
               Contains("PBS_NODEFILE: /nonexistent/aux/1742.pbs-server: cannot read"));
    env.erase("PBS_NODEFILE");
    CHECK_THAT(usage_error({"train.py"}, env),
               Contains("PBS_JOBID=1742.pbs-server is set but PBS_NODEFILE is not"));
  }
}

TEST_CASE("an LSF job script starts gangrun on LSB_MCPU_HOSTS' hosts", "[config][schedulers]") {
  std::string me = gangrun::host::host_name();
  EnvMap env = {{"LSB_JOBID", "5511"},
                {"LSB_MCPU_HOSTS", me + " 4 gpu-b 4"},
                {"LSB_HOSTS", me + " " + me + " " + me + " " + me + " gpu-b gpu-b gpu-b gpu-b"}};
  Options o = launch({"train.py"}, env);
  CHECK(o.launcher == Options::Launcher::ssh);
  REQUIRE(o.hosts.hosts.size() == 2);
  CHECK(o.hosts.hosts[1].slots.size() == 4);
  CHECK(o.rdzv_id == "5511");

  SECTION("LSB_HOSTS when LSB_MCPU_HOSTS is missing") {
    env.erase("LSB_MCPU_HOSTS");
    CHECK(launch({"train.py"}, env).hosts.hosts[0].slots.size() == 4);
  }
  SECTION("bad input names the variable") {
    env["LSB_MCPU_HOSTS"] = me + " 4 gpu-b";
    CHECK_THAT(usage_error({"train.py"}, env), Contains("expected pairs of a host and its slot"));
    env["LSB_MCPU_HOSTS"] = me + " 4 gpu-b x";
    CHECK_THAT(usage_error({"train.py"}, env), Contains("'x' after gpu-b is not a slot count"));
    env["LSB_MCPU_HOSTS"] = "gpu-a 4 gpu-b 4";
    CHECK_THAT(usage_error({"train.py"}, env), Contains("does not list it"));
  }
}

TEST_CASE("a list with a host per slot counts each host's slots in first-seen order",
          "[schedulers]") {
  std::vector<schedulers::Host> hosts = schedulers::hosts_from_slots({"a", "a", "b", "a"});
  REQUIRE(hosts.size() == 2);
  CHECK(hosts[0] == schedulers::Host{.name = "a", .slots = 3});
  CHECK(hosts[1] == schedulers::Host{.name = "b", .slots = 1});
  // Addresses are compared whole; names up to the first dot.
  CHECK(schedulers::check_this_host_listed({{"n1.x", 1}, {"n2", 1}}, "list", "n1", "PBS"));
  CHECK(schedulers::check_this_host_listed({{"10.0.0.1", 1}}, "list", "10.0.0.1", "PBS"));
  CHECK_FALSE(schedulers::check_this_host_listed({{"10.0.0.1", 1}}, "list", "10.0.0.2", "PBS"));
}

TEST_CASE("a node file of a million lines is read in one pass, hosts in first-seen order",
          "[schedulers]") {
  // 40,000 hosts with 25 slots each, listed round-robin: 16 MiB (config's
  // read limit) holds about this many lines. Comparing each line with every
  // host before it took minutes; a lookup per line takes well under a second.
  constexpr int k_hosts = 40'000;
  constexpr int k_slots = 25;
  auto name = [](int i) { return "node-" + std::to_string(i) + ".cluster.example"; };
  std::string text;
  text.reserve(static_cast<std::size_t>(k_hosts) * k_slots * 28);
  for (int slot = 0; slot < k_slots; ++slot) {
    for (int i = 0; i < k_hosts; ++i) text += name(i) + "\n";
  }
  schedulers::Context context{
      .read_file = [&](const std::string&) -> gangrun::Expected<std::string> { return text; },
      .host_name = name(0)};
  auto job = schedulers::read_pbs_job(
      {{"PBS_JOBID", "1742.pbs-server"}, {"PBS_NODEFILE", "/var/spool/pbs/aux/1742"}}, context);
  REQUIRE(job);
  REQUIRE(*job);
  const std::vector<schedulers::Host>& hosts = (*job)->hosts;
  REQUIRE(hosts.size() == k_hosts);
  bool in_order = true;
  bool every_slot = true;
  for (int i = 0; i < k_hosts; ++i) {
    in_order = in_order && hosts[static_cast<std::size_t>(i)].name == name(i);
    every_slot = every_slot && hosts[static_cast<std::size_t>(i)].slots == k_slots;
  }
  CHECK(in_order);
  CHECK(every_slot);
  CHECK((*job)->num_nodes.value == k_hosts);
}

TEST_CASE("LSB_MCPU_HOSTS: a host's slot counts that add up past the limit name the variable",
          "[config][schedulers]") {
  std::string me = gangrun::host::host_name();
  // 2,148 times a million slots is more than INT_MAX: the sum wrapped to a
  // negative count, and this host silently had no workers.
  std::string pairs;
  for (int i = 0; i < 2'148; ++i) pairs += me + " 1000000 ";
  EnvMap env = {{"LSB_JOBID", "5511"}, {"LSB_MCPU_HOSTS", pairs + "gpu-b 4"}};
  std::string error = usage_error({"train.py"}, env);
  CHECK_THAT(error, Contains("LSB_MCPU_HOSTS: the slot counts of " + me + " add up to"));
  CHECK_THAT(error, Contains("more than 1000000"));
  // Two counts that fit alone but not together.
  env["LSB_MCPU_HOSTS"] = me + " 600000 gpu-b 4 " + me + " 600000";
  CHECK_THAT(usage_error({"train.py"}, env),
             Contains("the slot counts of " + me + " add up to 1200000, more than 1000000"));
  // A host named twice within the limit keeps one entry with the sum.
  env["LSB_MCPU_HOSTS"] = me + " 2 gpu-b 4 " + me + " 3";
  Options o = launch({"train.py"}, env);
  REQUIRE(o.hosts.hosts.size() == 2);
  CHECK(o.hosts.hosts[0].slots.size() == 5);
}

TEST_CASE(
    "a scheduler's value quoted in an error is printable: no escape sequence reaches the "
    "terminal",
    "[config][schedulers]") {
  std::string me = gangrun::host::host_name();
  // An escape that would clear the screen, a bell, a newline that would forge a log line.
  const std::string nasty = "\x1b[2J\x07\nFAKE";
  auto printable_only = [](const std::string& text) {
    return std::none_of(text.begin(), text.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  };
  auto check = [&](const std::string& error, const std::string& names) {
    INFO(error);
    CHECK(printable_only(error));
    CHECK_THAT(error, Contains("\\x1b[2J\\x07"));
    CHECK_THAT(error, Contains(names));
  };
  SECTION("PBS") {
    NodeFile nodes(me + "\nnode" + nasty + "\n");
    check(usage_error({"train.py"}, {{"PBS_JOBID", "17"}, {"PBS_NODEFILE", nodes.path.string()}}),
          "is not a host name");
  }
  SECTION("LSF") {
    check(usage_error({"train.py"}, {{"LSB_JOBID", "5"}, {"LSB_MCPU_HOSTS", me + " 1" + nasty}}),
          "LSB_MCPU_HOSTS");
    check(usage_error({"train.py"}, {{"LSB_JOBID", "5"}, {"LSB_MCPU_HOSTS", me + " 1 b" + nasty}}),
          "LSB_MCPU_HOSTS");
  }
  SECTION("Kubeflow") {
    EnvMap env = pytorch_job_pod();
    env["WORLD_SIZE"] = "3" + nasty;
    check(usage_error({"train.py"}, env), "WORLD_SIZE=3");
  }
  SECTION("SkyPilot") {
    EnvMap env = skypilot_node();
    env["SKYPILOT_NODE_RANK"] = "1" + nasty;
    check(usage_error({"train.py"}, env), "SKYPILOT_NODE_RANK=1");
  }
  SECTION("an MPI launcher") {
    check(usage_error({"train.py"},
                      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2" + nasty}}),
          "OMPI_COMM_WORLD_SIZE=2");
  }
  SECTION("Slurm") {
    check(usage_error({"train.py"}, {{"SLURM_JOB_ID", "77" + nasty}}), "SLURM_JOB_ID=77");
    EnvMap step = {{"SLURM_JOB_ID", "77"},
                   {"SLURM_JOB_NUM_NODES", "2"},
                   {"SLURM_NNODES", "2"},
                   {"SLURM_STEP_ID", "0"},
                   {"SLURM_STEP_NUM_NODES", "2"},
                   {"SLURM_STEP_NODELIST", "n[1-2]" + nasty},
                   {"SLURM_JOB_NODELIST", "n[1-2]"},
                   {"SLURM_NODEID", "0"}};
    check(usage_error({"train.py"}, step), "SLURM_STEP_NODELIST");
  }
}
