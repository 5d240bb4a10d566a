// Kubeflow's PyTorchJob and SkyPilot: the system starts gangrun on every node
// and tells each its rank and the head.
#include "schedulers/readers.hpp"
#include "util/strings.hpp"

namespace gangrun::schedulers {

namespace {

using slurm::count_of;
using slurm::Read;
using slurm::text_of;
using slurm::variable_text;

Expected<Read<int>> required_count(const EnvMap& env, const char* name, std::string_view system,
                                   std::string_view what) {
  GANGRUN_TRY_ASSIGN(count, count_of(env, {name}));
  if (!*count) {
    return fail_usage(std::string(system) + " sets " + name + " (" + std::string(what) +
                      "), and it is not set: start gangrun as the job's command");
  }
  return **count;
}

Expected<void> check_rank(const Read<int>& rank, const Read<int>& nodes) {
  if (rank.value < nodes.value) return {};
  return fail_usage(variable_text(rank) + " is not a node of " + variable_text(nodes) +
                    " (node ranks count from 0)");
}

// "2" or elastic "1:4" (the most nodes, which is what the layer above
// replaces anyway: PET_NNODES is gangrun's own --nnodes spelling).
std::optional<Read<int>> pet_node_count(const EnvMap& env) {
  std::optional<Read<std::string>> text = text_of(env, {"PET_NNODES"});
  if (!text) return std::nullopt;
  std::string_view most = text->value;
  if (std::size_t colon = most.find(':'); colon != std::string_view::npos) {
    most = most.substr(colon + 1);
  }
  Expected<std::uint64_t> count = slurm::unsigned_number(most);
  if (!count || *count == 0 || *count > 1'000'000) return std::nullopt;
  return Read<int>{static_cast<int>(*count), text->variable, text->text};
}

}  // namespace

Expected<std::optional<Job>> read_kubeflow_job(const EnvMap& env) {
  if (!text_of(env, {"KUBERNETES_SERVICE_HOST"})) return std::nullopt;
  std::optional<Read<std::string>> master = text_of(env, {"MASTER_ADDR"});
  std::optional<Read<int>> pet_nodes = pet_node_count(env);
  if (!master && !pet_nodes) return std::nullopt;  // a pod, but not a PyTorchJob's
  constexpr std::string_view system = "Kubeflow's PyTorchJob";
  Job job;
  job.system = "Kubeflow PyTorchJob";
  job.start = Start::every_node;
  if (pet_nodes) {
    job.num_nodes = *pet_nodes;  // WORLD_SIZE counts workers when PET_NPROC_PER_NODE is set
  } else {
    GANGRUN_TRY_ASSIGN(world, required_count(env, "WORLD_SIZE", system, "the pods"));
    job.num_nodes = *world;
  }
  if (job.num_nodes.value == 0) return fail_usage(variable_text(job.num_nodes) + ": no pods");
  GANGRUN_TRY_ASSIGN(rank, count_of(env, {"PET_NODE_RANK", "RANK"}));
  if (!*rank) {
    return fail_usage(std::string(system) +
                      " sets RANK (this pod's index), and it is not set: start gangrun as the "
                      "pod's command");
  }
  GANGRUN_TRY(check_rank(**rank, job.num_nodes));
  job.node_rank = **rank;
  job.head = master ? master : text_of(env, {"PET_MASTER_ADDR"});
  GANGRUN_TRY_ASSIGN(port, count_of(env, {"MASTER_PORT", "PET_MASTER_PORT"}));
  if (*port && ((*port)->value == 0 || (*port)->value > 65535)) {
    return fail_usage(variable_text(**port) + " is not a port (1..65535)");
  }
  job.port = *port;
  // The master's service name ("train-master-0") is the job's own name.
  if (job.head) job.job_id = job.head;
  return job;
}

Expected<std::optional<Job>> read_skypilot_job(const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(rank, count_of(env, {"SKYPILOT_NODE_RANK"}));
  if (!*rank) return std::nullopt;
  constexpr std::string_view system = "SkyPilot";
  std::optional<Read<std::string>> ips = text_of(env, {"SKYPILOT_NODE_IPS"});
  if (!ips) {
    return fail_usage(variable_text(**rank) +
                      " is set but SKYPILOT_NODE_IPS is not, so the head node is unknown: start "
                      "gangrun in the task's run section");
  }
  std::vector<std::string> addresses;
  for (std::string_view line : strings::split(ips->value, '\n')) {
    std::string_view address = strings::trim(line);
    if (!address.empty()) addresses.emplace_back(address);
  }
  Job job;
  job.system = std::string(system);
  job.start = Start::every_node;
  GANGRUN_TRY_ASSIGN(nodes, count_of(env, {"SKYPILOT_NUM_NODES"}));
  std::string ips_origin = "SKYPILOT_NODE_IPS (" + std::to_string(addresses.size()) + " lines)";
  job.num_nodes = *nodes ? **nodes
                         : Read<int>{static_cast<int>(addresses.size()), ips_origin,
                                     std::to_string(addresses.size())};
  if (static_cast<int>(addresses.size()) != job.num_nodes.value) {
    return fail_usage(ips_origin + " does not match " + variable_text(job.num_nodes) +
                      ": start gangrun in the task's run section, whose variables agree");
  }
  GANGRUN_TRY(check_rank(**rank, job.num_nodes));
  job.node_rank = **rank;
  job.head = Read<std::string>{addresses.front(), ips->variable, ips->text};
  GANGRUN_TRY_ASSIGN(gpus, count_of(env, {"SKYPILOT_NUM_GPUS_PER_NODE"}));
  if (*gpus && (*gpus)->value > 0) job.workers_per_node = **gpus;
  job.job_id = text_of(env, {"SKYPILOT_TASK_ID"});
  return job;
}

}  // namespace gangrun::schedulers
