// The MPI reader: each launcher's variables as it sets them in a task (Open
// MPI 4.1's mpirun, Open MPI 5's PRRTE, MPICH's and Intel MPI's Hydra,
// MVAPICH2's mpirun_rsh), the head from an exported MASTER_ADDR, and the
// bad input: no head on several hosts, several tasks on one host, numbers
// that do not read.
#include "schedulers/mpi_job.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::ErrorCode;
using gangrun::schedulers::check_mpi_head;
using gangrun::schedulers::Job;
using gangrun::schedulers::Read;
using gangrun::schedulers::read_mpi_job;
using gangrun::schedulers::Start;

// What Open MPI 4.1.4's mpirun set in rank 1 of `mpirun --map-by ppr:1:node
// -np 2` over two hosts (the variables that matter here, and some beside).
EnvMap open_mpi_task(int rank = 1, int size = 2, int local_rank = 0, int local_size = 1) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(local_size)},
          {"OMPI_COMM_WORLD_NODE_RANK", std::to_string(local_rank)},
          {"OMPI_UNIVERSE_SIZE", std::to_string(size)},
          {"OMPI_MCA_ess_base_jobid", "383778817"},
          {"OMPI_MCA_ess_base_vpid", std::to_string(rank)},
          {"OMPI_MCA_orte_hnp_uri", "383778816.0;tcp://192.0.2.2:51877;tcp6://[fd00::2]:47271"},
          {"OMPI_MCA_orte_num_nodes", "2"},
          {"PMIX_NAMESPACE", "383778817"},
          {"PMIX_RANK", std::to_string(rank)},
          {"PMIX_ID", "383778817." + std::to_string(rank)},
          {"PMIX_HOSTNAME", "node-" + std::to_string(rank)}};
}

// Hydra's proxy (MPICH 4, Intel MPI) in rank 2 of `mpiexec -n 4 -ppn 2`.
EnvMap hydra_task() {
  return {{"PMI_RANK", "2"},         {"PMI_SIZE", "4"},        {"PMI_FD", "7"},
          {"MPI_LOCALRANKID", "0"},  {"MPI_LOCALNRANKS", "2"}, {"MASTER_ADDR", "node-0"},
          {"HYDRA_CONTROL_FD", "11"}};
}

Job read(const EnvMap& env, bool worker_per_task = false) {
  auto job = read_mpi_job(env, worker_per_task);
  if (!job) FAIL("unexpected error: " << job.error().message());
  REQUIRE(*job);
  return **job;
}

std::string error_of(const EnvMap& env, bool worker_per_task = false) {
  auto job = read_mpi_job(env, worker_per_task);
  REQUIRE_FALSE(job);
  CHECK(job.error().code() == ErrorCode::usage);
  return job.error().message();
}

}  // namespace

TEST_CASE("no MPI launcher: no job", "[schedulers][mpi]") {
  auto job = read_mpi_job({{"PATH", "/usr/bin"}, {"MASTER_ADDR", "node-0"}}, false);
  REQUIRE(job);
  CHECK_FALSE(*job);
  // PMIx alone (a PMIx server that is no MPI launcher) gives no size.
  auto pmix = read_mpi_job({{"PMIX_RANK", "0"}, {"PMIX_NAMESPACE", "job"}}, false);
  REQUIRE(pmix);
  CHECK_FALSE(*pmix);
  // srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE in a step, but no MPI_LOCALNRANKS: Slurm's.
  auto pmi2 = read_mpi_job({{"PMI_RANK", "1"},
                            {"PMI_SIZE", "2"},
                            {"PMI_FD", "5"},
                            {"SLURM_JOB_ID", "7"},
                            {"SLURM_STEP_ID", "0"}},
                           false);
  REQUIRE(pmi2);
  CHECK_FALSE(*pmi2);
}

TEST_CASE("Open MPI's mpirun: one task per host with MASTER_ADDR exported", "[schedulers][mpi]") {
  EnvMap env = open_mpi_task(1, 2);
  env["MASTER_ADDR"] = "node-0";
  env["MASTER_PORT"] = "29510";
  Job job = read(env);
  CHECK(job.system == "Open MPI");
  CHECK(job.start == Start::every_node);
  CHECK(job.num_nodes == Read<int>{2, "OMPI_COMM_WORLD_SIZE", "2"});
  CHECK(job.node_rank == Read<int>{1, "OMPI_COMM_WORLD_RANK", "1"});
  CHECK(job.head == Read<std::string>{"node-0", "MASTER_ADDR", "node-0"});
  CHECK(job.port == Read<int>{29510, "MASTER_PORT", "29510"});
  CHECK(job.job_id == Read<std::string>{"383778817", "OMPI_MCA_ess_base_jobid", "383778817"});
  CHECK(job.local_rank == Read<int>{0, "OMPI_COMM_WORLD_LOCAL_RANK", "0"});
  CHECK(job.tasks_on_node == Read<int>{1, "OMPI_COMM_WORLD_LOCAL_SIZE", "1"});
  CHECK_FALSE(job.workers_per_node);  // the user's --nproc_per_node
  CHECK(job.hosts.empty());
  CHECK(check_mpi_head(job));

  SECTION("without MASTER_PORT the port comes from the job id, the same in every task") {
    env.erase("MASTER_PORT");
    Job without = read(env);
    REQUIRE(without.port);
    CHECK(without.port->value == 20000 + 383778817 % 12000);
    CHECK(without.port->variable == "OMPI_MCA_ess_base_jobid");
    CHECK(read(open_mpi_task(0, 2)).port == without.port);
  }
  SECTION("a MASTER_PORT that is no port is named") {
    env["MASTER_PORT"] = "70000";
    CHECK_THAT(error_of(env), Contains("MASTER_PORT=70000: not a port"));
  }
}

TEST_CASE("Open MPI without MASTER_ADDR: the head is missing, and the message says what to do",
          "[schedulers][mpi]") {
  Job job = read(open_mpi_task(1, 2));
  CHECK_FALSE(job.head);
  auto checked = check_mpi_head(job);
  REQUIRE_FALSE(checked);
  CHECK(checked.error().code() == ErrorCode::usage);
  const std::string& message = checked.error().message();
  CHECK_THAT(message, Contains("OMPI_COMM_WORLD_RANK=1 of OMPI_COMM_WORLD_SIZE=2"));
  CHECK_THAT(message, Contains("-x MASTER_ADDR=HOST"));
  CHECK_THAT(message, Contains("--master_addr HOST"));
  CHECK_THAT(message, Contains("--launcher openmpi"));

  SECTION("one task alone needs no head") { CHECK(check_mpi_head(read(open_mpi_task(0, 1)))); }
}

TEST_CASE("Open MPI 5 (PRRTE) names its job by the PMIx namespace", "[schedulers][mpi]") {
  EnvMap env = open_mpi_task(0, 2);
  env.erase("OMPI_MCA_ess_base_jobid");
  env["PMIX_NAMESPACE"] = "prterun-node-0-4121@1";
  Job job = read(env);
  CHECK(job.job_id ==
        Read<std::string>{"prterun-node-0-4121@1", "PMIX_NAMESPACE", "prterun-node-0-4121@1"});
  REQUIRE(job.port);
  CHECK(job.port->value >= 20000);
  CHECK(job.port->value < 32000);
  CHECK(read(env).port == job.port);
}

TEST_CASE("several tasks on one host: refused without --worker-per-task", "[schedulers][mpi]") {
  EnvMap env = open_mpi_task(3, 4, 1, 2);
  env["MASTER_ADDR"] = "node-0";
  std::string message = error_of(env);
  CHECK_THAT(message, Contains("Open MPI runs 2 tasks of this job on this host"));
  CHECK_THAT(message, Contains("OMPI_COMM_WORLD_LOCAL_SIZE=2"));
  CHECK_THAT(message, Contains("--map-by ppr:1:node"));
  CHECK_THAT(message, Contains("--worker-per-task"));

  SECTION("with --worker-per-task each task is a node of one worker") {
    Job job = read(env, true);
    CHECK(job.num_nodes.value == 4);
    CHECK(job.node_rank->value == 3);
    CHECK(job.workers_per_node->value == 1);
    CHECK(job.local_rank->value == 1);
    CHECK(job.tasks_on_node->value == 2);
    CHECK(job.head->value == "node-0");
  }
  SECTION("every task on this host: the head is this host") {
    Job job = read(open_mpi_task(1, 2, 1, 2), true);
    CHECK(job.head == Read<std::string>{"127.0.0.1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"});
    CHECK(check_mpi_head(job));
  }
}

TEST_CASE("MPICH's and Intel MPI's Hydra", "[schedulers][mpi]") {
  Job job = read(hydra_task(), true);
  CHECK(job.system == "MPICH/Intel MPI (Hydra)");
  CHECK(job.num_nodes == Read<int>{4, "PMI_SIZE", "4"});
  CHECK(job.node_rank == Read<int>{2, "PMI_RANK", "2"});
  CHECK(job.local_rank == Read<int>{0, "MPI_LOCALRANKID", "0"});
  CHECK(job.tasks_on_node == Read<int>{2, "MPI_LOCALNRANKS", "2"});
  CHECK(job.head->value == "node-0");
  CHECK_FALSE(job.job_id);  // Hydra names no job: no port either
  CHECK_FALSE(job.port);
  CHECK_THAT(error_of(hydra_task()), Contains("MPI_LOCALNRANKS=2"));

  SECTION("without MASTER_ADDR the message names PMI_RANK") {
    EnvMap env = hydra_task();
    env.erase("MASTER_ADDR");
    auto checked = check_mpi_head(read(env, true));
    REQUIRE_FALSE(checked);
    CHECK_THAT(checked.error().message(), Contains("PMI_RANK=2 of PMI_SIZE=4"));
  }
}

TEST_CASE("MVAPICH2's mpirun_rsh", "[schedulers][mpi]") {
  Job job = read({{"MV2_COMM_WORLD_RANK", "0"},
                  {"MV2_COMM_WORLD_SIZE", "2"},
                  {"MV2_COMM_WORLD_LOCAL_RANK", "0"},
                  {"MV2_COMM_WORLD_LOCAL_SIZE", "1"},
                  {"MPIRUN_ID", "5522"},
                  {"MASTER_ADDR", "10.0.0.1"}});
  CHECK(job.system == "MVAPICH2");
  CHECK(job.node_rank->variable == "MV2_COMM_WORLD_RANK");
  CHECK(job.job_id->value == "5522");
}

TEST_CASE("MPI variables that do not read are named", "[schedulers][mpi]") {
  SECTION("a size without a rank") {
    CHECK_THAT(error_of({{"OMPI_COMM_WORLD_SIZE", "2"}}),
               Contains("not OMPI_COMM_WORLD_RANK, which Open MPI sets in every task"));
  }
  SECTION("a rank that is not a number") {
    EnvMap env = open_mpi_task();
    env["OMPI_COMM_WORLD_RANK"] = "one";
    CHECK_THAT(error_of(env), Contains("OMPI_COMM_WORLD_RANK=one: expected a count"));
  }
  SECTION("a negative size") {
    EnvMap env = open_mpi_task();
    env["OMPI_COMM_WORLD_SIZE"] = "-2";
    CHECK_THAT(error_of(env), Contains("OMPI_COMM_WORLD_SIZE=-2: expected a count"));
  }
  SECTION("a rank outside the world") {
    CHECK_THAT(error_of(open_mpi_task(2, 2)),
               Contains("OMPI_COMM_WORLD_RANK=2 is not a rank of OMPI_COMM_WORLD_SIZE=2"));
  }
  SECTION("a size of 0") {
    CHECK_THAT(error_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}), Contains("PMI_SIZE=0"));
  }
  SECTION("more tasks on the host than in the world") {
    CHECK_THAT(error_of(open_mpi_task(0, 2, 0, 3), true),
               Contains("OMPI_COMM_WORLD_LOCAL_SIZE=3 does not fit OMPI_COMM_WORLD_SIZE=2"));
  }
  SECTION("a local rank outside the host's tasks") {
    CHECK_THAT(error_of(open_mpi_task(0, 4, 2, 2), true),
               Contains("OMPI_COMM_WORLD_LOCAL_RANK=2 is not a task of"));
  }
  SECTION("a count too large for an int") {
    CHECK_THAT(error_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "99999999999"}}),
               Contains("PMI_SIZE=99999999999: expected a count"));
  }
}
