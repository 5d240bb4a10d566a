// The one job model: the ordered list of readers gives one schedulers::Job
// for every system, Slurm's with all its reader read kept in Job::slurm, and
// the job's one line that every dry run prints.
#include "schedulers/job.hpp"

#include <catch2/catch.hpp>

namespace {

using gangrun::EnvMap;
using gangrun::Expected;
using gangrun::schedulers::Context;
using gangrun::schedulers::from_slurm;
using gangrun::schedulers::Job;
using gangrun::schedulers::job_line;
using gangrun::schedulers::read_job;
using gangrun::schedulers::Start;

// A step of Slurm job 41 on node 1 of 3, one task per node.
EnvMap slurm_step() {
  return {{"SLURM_JOB_ID", "41"},        {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NUM_NODES", "3"}, {"SLURM_STEP_NODELIST", "gpu-a[07-09]"},
          {"SLURM_NODEID", "1"},         {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}};
}

Context node_file(std::string text, std::string host_name) {
  return Context{.read_file = [text = std::move(text)](
                                  const std::string&) -> Expected<std::string> { return text; },
                 .host_name = std::move(host_name)};
}

}  // namespace

TEST_CASE("a Slurm job is the one Job, with all its reader read", "[schedulers][slurm]") {
  auto found = read_job(slurm_step(), Context{});
  REQUIRE(found);
  REQUIRE(*found);
  const Job& job = **found;
  REQUIRE(job.is_slurm());
  CHECK(job.system == "Slurm");
  REQUIRE(job.job_id);
  CHECK(job.job_id->value == "41");
  CHECK(job.job_id->variable == "SLURM_JOB_ID");
  CHECK(job.num_nodes.value == 3);
  CHECK(job.slurm->place == gangrun::slurm::Place::step);
  CHECK(job.slurm->node_id->value == 1);
  CHECK(job.slurm->node_list.value == "gpu-a[07-09]");
  // The other systems' fields stay empty: srun, not this shape, places it.
  CHECK_FALSE(job.node_rank);
  CHECK_FALSE(job.head);
  CHECK(job.hosts.empty());
}

TEST_CASE("the readers' order: an MPI task under Slurm is the MPI launcher's job",
          "[schedulers][slurm]") {
  EnvMap env = slurm_step();
  env.insert({{"OMPI_COMM_WORLD_RANK", "1"},
              {"OMPI_COMM_WORLD_SIZE", "2"},
              {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
              {"MASTER_ADDR", "127.0.0.1"}});
  auto found = read_job(env, Context{});
  REQUIRE(found);
  REQUIRE(*found);
  CHECK_FALSE((*found)->is_slurm());
  CHECK((*found)->system == "Open MPI");
}

TEST_CASE("no job system: no job", "[schedulers]") {
  auto found = read_job({{"PATH", "/bin"}}, Context{});
  REQUIRE(found);
  CHECK_FALSE(*found);
}

TEST_CASE("a PBS job is the one Job without a Slurm part", "[schedulers]") {
  auto found = read_job({{"PBS_JOBID", "1742.pbs-server"}, {"PBS_NODEFILE", "/aux/1742"}},
                        node_file("n1\nn1\nn2\n", "n1"));
  REQUIRE(found);
  REQUIRE(*found);
  CHECK_FALSE((*found)->is_slurm());
  CHECK((*found)->start == Start::first_node);
  CHECK((*found)->hosts.size() == 2);
}

TEST_CASE("the job's one line is the same shape for every system", "[schedulers][slurm]") {
  gangrun::slurm::Job slurm;
  slurm.job_id = {.value = "4711", .variable = "SLURM_JOB_ID", .text = "4711"};
  slurm.num_nodes.value = 3;
  CHECK(job_line(from_slurm(slurm), 1, 3) == "Slurm job 4711, node 1 of 3");

  Job pbs;
  pbs.system = "PBS";
  pbs.start = Start::first_node;
  pbs.job_id = {.value = "1742.pbs-server", .variable = "PBS_JOBID", .text = "1742.pbs-server"};
  pbs.hosts_origin = "PBS_NODEFILE=/aux/1742";
  CHECK(job_line(pbs, 0, 2) ==
        "PBS job 1742.pbs-server, node 0 of 2, hosts from PBS_NODEFILE=/aux/1742");

  Job hydra;
  hydra.system = "MPICH/Intel MPI (Hydra)";
  CHECK(job_line(hydra, 1, 2) == "MPICH/Intel MPI (Hydra), no job id, node 1 of 2");
}
