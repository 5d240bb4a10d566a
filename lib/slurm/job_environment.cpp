#include "slurm/job_environment.hpp"

#include "util/strings.hpp"

#include <limits>

namespace gangrun::slurm {

namespace {

Expected<Read<int>> required_count(const EnvMap& env, std::initializer_list<const char*> names,
                                   const char* what) {
  GANGRUN_TRY_ASSIGN(count, count_of(env, names));
  if (!*count) {
    return fail_usage(std::string("Slurm set SLURM_JOB_ID but not ") + *names.begin() + " (" +
                      what + "); run gangrun through srun or sbatch, or unset SLURM_JOB_ID");
  }
  return **count;
}

// This node's entry of the step's per-node task counts.
Expected<std::optional<Read<int>>> tasks_on_node(const EnvMap& env, int node_id) {
  std::optional<Read<std::string>> list = text_of(env, {"SLURM_STEP_TASKS_PER_NODE"});
  if (!list) return std::nullopt;
  GANGRUN_TRY_ASSIGN(counts, expand_counts(list->value).map_error([&](const Error& error) {
    return Error(ErrorCode::usage, variable_text(*list) + ": " + error.message());
  }));
  if (node_id >= static_cast<int>(counts->size())) {
    return fail_usage(variable_text(*list) + " lists " + std::to_string(counts->size()) +
                      " nodes, but SLURM_NODEID is " + std::to_string(node_id));
  }
  return Read<int>{(*counts)[static_cast<std::size_t>(node_id)], list->variable, list->text};
}

Expected<void> read_step(const EnvMap& env, Job& job) {
  GANGRUN_TRY_ASSIGN(node_id, required_count(env, {"SLURM_NODEID"}, "this node's index"));
  if (node_id->value >= job.num_nodes.value) {
    return fail_usage(variable_text(*node_id) + " is not a node of " +
                      variable_text(job.num_nodes));
  }
  job.node_id = *node_id;
  GANGRUN_TRY_ASSIGN(procid, count_of(env, {"SLURM_PROCID"}));
  job.procid = *procid;
  GANGRUN_TRY_ASSIGN(local_id, count_of(env, {"SLURM_LOCALID"}));
  job.local_id = *local_id;
  GANGRUN_TRY_ASSIGN(num_tasks, count_of(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}));
  job.num_tasks = *num_tasks;
  GANGRUN_TRY_ASSIGN(on_node, tasks_on_node(env, node_id->value));
  job.tasks_on_node = *on_node;
  return {};
}

}  // namespace

Expected<std::optional<Job>> read_job(const EnvMap& env) {
  std::optional<Read<std::string>> job_id = text_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  if (!job_id) return std::nullopt;
  if (!unsigned_number(job_id->value)) {
    return fail_usage(variable_text(*job_id) + ": expected a job number");
  }
  Job job;
  job.job_id = *job_id;
  job.step_id = text_of(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  job.place = job.step_id ? Place::step : Place::allocation;

  if (job.place == Place::step) {
    GANGRUN_TRY_ASSIGN(nodes, required_count(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"},
                                             "the step's node count"));
    job.num_nodes = *nodes;
    std::optional<Read<std::string>> list =
        text_of(env, {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
    if (!list) return fail_usage("Slurm set SLURM_STEP_ID but no SLURM_STEP_NODELIST");
    job.node_list = *list;
  } else {
    GANGRUN_TRY_ASSIGN(nodes, required_count(env, {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"},
                                             "the allocation's node count"));
    job.num_nodes = *nodes;
    std::optional<Read<std::string>> list = text_of(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
    if (!list) return fail_usage("Slurm set SLURM_JOB_ID but no SLURM_JOB_NODELIST");
    job.node_list = *list;
  }
  if (job.num_nodes.value < 1) {
    return fail_usage(variable_text(job.num_nodes) + ": expected 1 or more");
  }
  if (job.place == Place::step) GANGRUN_TRY(read_step(env, job));

  GANGRUN_TRY_ASSIGN(gpus, count_of(env, {"SLURM_GPUS_ON_NODE"}));
  if (*gpus && (*gpus)->value > 0) job.gpus_on_node = *gpus;
  GANGRUN_TRY_ASSIGN(restarts, count_of(env, {"SLURM_RESTART_COUNT"}));
  job.restart_count = *restarts;
  if (auto name = text_of(env, {"SLURMD_NODENAME"})) job.node_name = name->value;
  return std::optional<Job>(std::move(job));
}

Expected<std::vector<int>> expand_counts(std::string_view text) {
  std::vector<int> counts;
  for (std::string_view item : strings::split(text, ',')) {
    // "N" or "N(xK)"
    std::string_view number = item;
    std::uint64_t repeat = 1;
    if (std::size_t open = item.find('('); open != std::string_view::npos) {
      if (!item.ends_with(')') || item.substr(open, 2) != "(x") {
        return fail_usage(strings::quoted(strings::printable(item)) + " is neither N nor N(xK)");
      }
      Expected<std::uint64_t> times =
          unsigned_number(item.substr(open + 2, item.size() - open - 3));
      if (!times || *times == 0)
        return fail_usage("bad repeat in " + strings::quoted(strings::printable(item)));
      repeat = *times;
      number = item.substr(0, open);
    }
    Expected<std::uint64_t> count = unsigned_number(number);
    if (!count || *count > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      return fail_usage(strings::quoted(strings::printable(item)) + " is not a count");
    }
    // A job has at most a few hundred thousand nodes; more is a broken list.
    constexpr std::uint64_t k_most_nodes = 1U << 20U;
    if (repeat > k_most_nodes || counts.size() + repeat > k_most_nodes) {
      return fail_usage("more than " + std::to_string(k_most_nodes) + " nodes");
    }
    counts.insert(counts.end(), repeat, static_cast<int>(*count));
  }
  return counts;
}

namespace {
constexpr std::uint64_t k_first_job_port = 20000;
constexpr std::uint64_t k_job_ports = 12000;
}  // namespace

int port_in_job_range(std::uint64_t number) {
  return static_cast<int>(k_first_job_port + number % k_job_ports);
}

int store_port(const Job& job) {
  constexpr std::uint64_t k_steps_per_job = 16;
  std::uint64_t job_number = unsigned_number(job.job_id.value).value_or(0);
  std::uint64_t step = job.step_id ? unsigned_number(job.step_id->value).value_or(0) : 0;
  // The same sum modulo k_job_ports, without overflowing on large job numbers.
  return port_in_job_range((job_number % k_job_ports) * k_steps_per_job + step % k_job_ports);
}

std::string head_node_origin(const Job& job) {
  return "the first host of " + variable_text(job.node_list);
}

std::string run_id(const Job& job) {
  return job.step_id ? job.job_id.value + "." + job.step_id->value : job.job_id.value;
}

}  // namespace gangrun::slurm
