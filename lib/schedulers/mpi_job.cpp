#include "schedulers/mpi_job.hpp"

#include "slurm/job_environment.hpp"
#include "util/strings.hpp"

#include <array>
#include <charconv>
#include <cstdint>

namespace gangrun::schedulers {

namespace {

// The variables one family of launchers sets in every task. Each family's
// own names are looked for before PMI_*, which every Hydra sets (MVAPICH2's
// mpiexec among them); Open MPI's mpirun sets no PMI_RANK.
struct Dialect {
  const char* system;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
  std::array<const char*, 3> job_ids;  // the first set one names the job; nullptr: none
  const char* launcher;                // for messages: how the user started the tasks
};

constexpr std::array<Dialect, 3> k_dialects = {{
    // Open MPI 4 names its job OMPI_MCA_ess_base_jobid (3.x and older
    // OMPI_MCA_orte_ess_jobid); PMIX_NAMESPACE holds the same number, and
    // is the one name Open MPI 5 (PRRTE) gives.
    {"Open MPI",
     "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE",
     {"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"},
     "mpirun"},
    {"MVAPICH2",
     "MV2_COMM_WORLD_RANK",
     "MV2_COMM_WORLD_SIZE",
     "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE",
     {"MPIRUN_ID", nullptr, nullptr},
     "mpirun_rsh"},
    // MPICH's Hydra and Intel MPI (a Hydra too) give their tasks no job id.
    {"MPICH/Intel MPI (Hydra)",
     "PMI_RANK",
     "PMI_SIZE",
     "MPI_LOCALRANKID",
     "MPI_LOCALNRANKS",
     {nullptr, nullptr, nullptr},
     "mpiexec"},
}};

using slurm::count_of;
using slurm::variable_text;

// A dialect's variable, where it has one (name is nullptr where it has none).
std::optional<Read<std::string>> text_of(const EnvMap& env, const char* name) {
  if (name == nullptr) return std::nullopt;
  return slurm::text_of(env, {name});
}

Expected<Read<int>> required_count(const EnvMap& env, const Dialect& dialect, const char* name) {
  GANGRUN_TRY_ASSIGN(count, count_of(env, {name}));
  if (!*count) {
    return fail_usage(std::string(dialect.rank) + " or " + dialect.size + " is set but not " +
                      name + ", which " + dialect.system +
                      " sets in every task it starts; start gangrun through " + dialect.launcher +
                      ", or unset the other variable");
  }
  return **count;
}

// The store's port when the user exported none: the same in every task of
// the job, different (most likely) for concurrent jobs on one head, and
// in Slurm's range below Linux's ephemeral ports (slurm::store_port).
int port_of_job(const std::string& job_id) {
  std::uint64_t number = 0;
  auto [end, error] = std::from_chars(job_id.data(), job_id.data() + job_id.size(), number);
  if (error != std::errc() || end != job_id.data() + job_id.size()) {
    // A name (PMIx's "prterun-host-1234@1"): FNV-1a of its text.
    constexpr std::uint64_t k_fnv_offset = 14695981039346656037ULL;
    constexpr std::uint64_t k_fnv_prime = 1099511628211ULL;
    number = k_fnv_offset;
    for (char c : job_id) number = (number ^ static_cast<unsigned char>(c)) * k_fnv_prime;
  }
  return slurm::port_in_job_range(number);
}

Expected<std::optional<Read<int>>> port_of(const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(port, count_of(env, {"MASTER_PORT"}));
  if (*port && ((*port)->value < 1 || (*port)->value > 65535)) {
    return fail_usage(variable_text(**port) + ": not a port (1..65535)");
  }
  return *port;
}

// Where this task stands on its host, checked against the world.
Expected<void> read_host_share(const EnvMap& env, const Dialect& dialect, Job& job) {
  GANGRUN_TRY_ASSIGN(local_rank, count_of(env, {dialect.local_rank}));
  GANGRUN_TRY_ASSIGN(local_size, count_of(env, {dialect.local_size}));
  if (*local_size) {
    const Read<int>& tasks = **local_size;
    if (tasks.value < 1 || tasks.value > job.num_nodes.value) {
      return fail_usage(variable_text(tasks) + " does not fit " + variable_text(job.num_nodes));
    }
    if (*local_rank && (*local_rank)->value >= tasks.value) {
      return fail_usage(variable_text(**local_rank) + " is not a task of " + variable_text(tasks));
    }
  }
  job.local_rank = *local_rank;
  job.tasks_on_node = *local_size;
  return {};
}

Expected<void> check_one_task_here(const Job& job) {
  if (!job.tasks_on_node || job.tasks_on_node->value <= 1) return {};
  const std::string tasks = std::to_string(job.tasks_on_node->value);
  return fail_usage(
      job.system + " runs " + tasks + " tasks of this job on this host (" +
      variable_text(*job.tasks_on_node) +
      "), but gangrun is one agent per node that starts the node's workers itself. Start one "
      "task per host ('mpirun --map-by ppr:1:node gangrun --nproc_per_node N ...', or let "
      "gangrun do it: 'gangrun --launcher openmpi -H HOSTFILE ...'), or give --worker-per-task "
      "to make each MPI task one worker");
}

}  // namespace

Expected<std::optional<Job>> read_mpi_job(const EnvMap& env, bool worker_per_task) {
  const Dialect* dialect = nullptr;
  for (const Dialect& candidate : k_dialects) {
    if (text_of(env, candidate.rank) || text_of(env, candidate.size)) {
      dialect = &candidate;
      break;
    }
  }
  if (dialect == nullptr) return std::nullopt;
  if (dialect == &k_dialects.back() && !text_of(env, dialect->local_size) &&
      text_of(env, "SLURM_STEP_ID")) {
    return std::nullopt;  // srun's own PMI (--mpi=pmi2): a Slurm step
  }

  Job job;
  job.system = dialect->system;
  job.start = Start::every_node;
  GANGRUN_TRY_ASSIGN(size, required_count(env, *dialect, dialect->size));
  GANGRUN_TRY_ASSIGN(rank, required_count(env, *dialect, dialect->rank));
  if (size->value < 1) return fail_usage(variable_text(*size) + ": expected 1 or more");
  if (rank->value >= size->value) {
    return fail_usage(variable_text(*rank) + " is not a rank of " + variable_text(*size));
  }
  job.num_nodes = *size;
  job.node_rank = *rank;
  GANGRUN_TRY(read_host_share(env, *dialect, job));
  if (!worker_per_task) GANGRUN_TRY(check_one_task_here(job));
  if (worker_per_task) job.workers_per_node = Read<int>{1, "--worker-per-task", "1"};

  for (const char* name : dialect->job_ids) {
    if ((job.job_id = text_of(env, name))) break;
  }
  if (auto master_addr = text_of(env, "MASTER_ADDR")) {
    job.head = *master_addr;
  } else if (job.tasks_on_node && job.tasks_on_node->value == size->value) {
    // Every task runs here: the store is this host's.
    job.head = Read<std::string>{"127.0.0.1", job.tasks_on_node->variable, job.tasks_on_node->text};
  }
  GANGRUN_TRY_ASSIGN(port, port_of(env));
  job.port = *port;
  if (!job.port && job.job_id && size->value > 1) {
    job.port = Read<int>{port_of_job(job.job_id->value), job.job_id->variable, job.job_id->text};
  }
  return std::optional<Job>(std::move(job));
}

Expected<void> check_mpi_head(const Job& job) {
  if (job.head || job.num_nodes.value <= 1 || !job.node_rank) return {};
  const std::string tasks = std::to_string(job.num_nodes.value);
  return fail_usage(
      variable_text(*job.node_rank) + " of " + variable_text(job.num_nodes) + ": " + job.system +
      " started this gangrun as one of " + tasks +
      " tasks, but nothing in its environment names the host of rank 0, where the job's store "
      "runs. Export it to every task ('mpirun -x MASTER_ADDR=HOST -x MASTER_PORT=PORT gangrun "
      "...', HOST being where rank 0 runs: the first host of the hostfile), or give "
      "--master_addr HOST; 'gangrun --launcher openmpi -H HOSTFILE ...' does this itself");
}

}  // namespace gangrun::schedulers
