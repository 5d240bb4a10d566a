#include "launch/dry_run.hpp"

#include "launch/dialects/worker_variables.hpp"
#include "launch/network_interface.hpp"
#include "launch/numa_cpus.hpp"
#include "launch/run_directory.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"
#include "util/temp_dir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gangrun::launch {
namespace {

// The backend's name as --rdzv_backend spells it (config/rendezvous_backend.hpp).
std::string_view rendezvous_backend_name(const LaunchPlan& plan) {
  return config::backend_name(plan.c10d ? config::RendezvousBackend::c10d
                                        : config::RendezvousBackend::static_ranks);
}

std::string planned_port(const LaunchPlan& plan) {
  return plan.master_port ? std::to_string(*plan.master_port) : k_free_port_placeholder;
}

// "cuda: 2 selected (named 2,0 in CUDA_VISIBLE_DEVICES), per-rank"; "inherited" when
// the launch does not depend on devices.
std::string devices_text(const LaunchPlan& plan) {
  if (!plan.devices) return "inherited unchanged (no device option given)";
  const NodeDevices& devices = *plan.devices;
  if (!devices.view) return accel::to_string(devices.kind);
  std::vector<std::string> tokens;
  tokens.reserve(devices.selected.size());
  for (const placement::Candidate& candidate : devices.selected) tokens.push_back(candidate.token);
  return fmt::format("{}: {} selected ({} {}), {}", accel::to_string(devices.kind),
                     devices.selected.size(), devices.view->variable,
                     tokens.empty() ? "-" : strings::join(tokens, ","),
                     plan.per_rank_visibility ? "per-rank" : "shared");
}

// What the workers' interface variables will be, without the log's "network: ".
std::string planned_network(const LaunchPlan& plan) {
  std::string network = planned_network_text(plan, list_network_interfaces());
  const std::string label = "network: ";
  if (network.starts_with(label)) network.erase(0, label.size());
  return network;
}

}  // namespace

std::string planned_run_dir(const LaunchPlan& plan) {
  // XXXXXX: the unique part is chosen when the run starts.
  return RunDirectory::planned_path(plan.log_dir, temp_dir(plan.host_env), plan.run_id);
}

nlohmann::json plan_to_json(const LaunchPlan& plan) {
  std::string run_dir = planned_run_dir(plan);
  RoundAssignment first_round = static_assignment(plan, 0, planned_port(plan));
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerPlan& worker : plan.workers) {
    workers.push_back({
        {"rank", first_round.rank_of(worker)},
        {"local_rank", worker.local_rank},
        {"argv", worker.argv},
        {"env", worker_variables(plan, worker, first_round, run_dir)},
        {"prefix", worker_prefix(plan, worker, first_round)},
        // The CPUs it is pinned to (--bind_cores_to_rank, --numa_binding); null: not pinned.
        {"cpus", worker.cpus.empty() ? nlohmann::json() : nlohmann::json(worker.cpus)},
    });
  }
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [name, origin] : plan.option_origins) {
    options[name] = {{"value", origin.text}, {"source", config::to_string(origin.source)}};
  }
  return {
      {"run_id", plan.run_id},
      {"host", plan.host},
      {"nnodes", plan.nnodes},
      {"node_rank", plan.node_rank},
      {"local_world_size", plan.local_world_size},
      {"world_size", first_round.world_size},
      {"master_addr", plan.master_addr},
      {"master_port", plan.master_port ? nlohmann::json(*plan.master_port) : nlohmann::json()},
      {"executable", plan.program.executable},
      {"entrypoint", plan.program.entrypoint},
      {"output", plan.prefix_output ? "prefix" : "inherit"},
      {"log_dir", plan.log_dir ? nlohmann::json(*plan.log_dir) : nlohmann::json()},
      {"max_restarts", plan.max_restarts},
      {"rendezvous", plan.multi_node ? nlohmann::json{{"backend", rendezvous_backend_name(plan)},
                                                      {"min_nnodes", plan.min_nnodes},
                                                      {"max_nnodes", plan.nnodes}}
                                     : nlohmann::json()},
      {"devices", devices_text(plan)},
      // What the workers' interface variables will be, and why; null on one node.
      {"network", plan.multi_node ? nlohmann::json(planned_network(plan)) : nlohmann::json()},
      {"workers", workers},
      {"options", options},
  };
}

namespace {

// What a node of a multi-node run would wait for before its first round.
std::string rendezvous_text(const LaunchPlan& plan) {
  const config::RendezvousConf& conf = plan.rendezvous;
  std::string where = host::endpoint_text(plan.master_addr, planned_port(plan));
  std::string out;
  if (plan.c10d) {
    std::string nodes = plan.min_nnodes == plan.nnodes
                            ? std::to_string(plan.nnodes)
                            : fmt::format("{} to {}", plan.min_nnodes, plan.nnodes);
    std::string host = conf.is_host ? (*conf.is_host ? "this node (is_host)" : "another node")
                                    : "the first agent that can listen on " + plan.master_addr;
    out += fmt::format("  store:      {} (hosted by {})\n", where, host);
    out += fmt::format(
        "  rendezvous: c10d, {} nodes; waits up to {} s for them to join{}; the round assigns "
        "node ranks, so the ranks below take this node as node {}\n",
        nodes, conf.join_timeout,
        plan.min_nnodes == plan.nnodes ? ""
                                       : fmt::format(" (then {} s more once {} joined)",
                                                     conf.last_call_timeout, plan.min_nnodes),
        plan.node_rank);
  } else {
    out += fmt::format("  store:      {} (hosted by node 0{})\n", where,
                       plan.node_rank == 0 ? ": this node" : "");
    out += fmt::format(
        "  rendezvous: static, {} nodes; waits up to {} s for every node rank to join; the ranks "
        "below take every node to run {} worker(s)\n",
        plan.nnodes, conf.join_timeout, plan.local_world_size);
  }
  out += fmt::format("  network:    {}\n", planned_network(plan));
  out +=
      fmt::format("  heartbeat:  TCP keep-alive every {} s, a node silent for {} s is lost\n",
                  conf.keep_alive_interval, conf.keep_alive_interval * conf.keep_alive_max_attempt);
  return out;
}

}  // namespace

std::string plan_to_text(const LaunchPlan& plan, bool verbose) {
  std::string run_dir = planned_run_dir(plan);
  RoundAssignment first_round = static_assignment(plan, 0, planned_port(plan));
  std::string out =
      fmt::format("gangrun dry run: {} worker(s) on {} (node {} of {}), world size {}, run id {}\n",
                  plan.local_world_size, plan.host, plan.node_rank, plan.nnodes,
                  first_round.world_size, plan.run_id);
  out += fmt::format("  executable: {}\n", plan.program.executable);
  // The job in one line for every system (schedulers::job_line); a PBS or
  // LSF job of several hosts plans the ssh start instead, which prints the
  // same line (remote/ssh_start.hpp).
  if (plan.job) {
    out += fmt::format("  job:        {}\n",
                       schedulers::job_line(*plan.job, plan.node_rank, plan.nnodes));
  }
  if (plan.job && plan.job->is_slurm()) {
    const slurm::Job& job = *plan.job->slurm;
    out += fmt::format("  slurm:      job {}{}, {} nodes ({}){}\n", job.job_id.value,
                       job.step_id ? ", step " + job.step_id->value : ", outside any step",
                       job.num_nodes.value, job.node_list.text,
                       plan.worker_per_task ? ", one worker per task" : "");
  }
  if (plan.multi_node) {
    out += rendezvous_text(plan);
  } else {
    out += fmt::format("  store:      {} (hosted by rank 0)\n",
                       host::endpoint_text(plan.master_addr, planned_port(plan)));
  }
  out += fmt::format("  output:     {}\n", plan.prefix_output ? "prefix" : "inherit");
  out += fmt::format("  files:      {}\n", run_dir);
  out += fmt::format("  devices:    {}\n", devices_text(plan));
  for (const WorkerPlan& worker : plan.workers) {
    out +=
        fmt::format("rank {} (local_rank {}):\n", first_round.rank_of(worker), worker.local_rank);
    out += fmt::format("  command: {}\n", strings::shell_join(worker.argv));
    if (!worker.cpus.empty()) {
      std::string why = plan.numa_binding
                            ? std::string("--numa_binding ") + to_string(*plan.numa_binding)
                            : std::string("--bind_cores_to_rank");
      out += fmt::format("  cpus:    {} ({})\n", fmt::join(worker.cpus, ","), why);
    }
    for (const auto& [name, value] : worker_variables(plan, worker, first_round, run_dir)) {
      out += fmt::format("  {}={}\n", name, value);
    }
  }
  if (verbose) {
    out += "option values and where they came from:\n";
    for (const auto& [name, origin] : plan.option_origins) {
      out +=
          fmt::format("  {:<22} {:<24} {}\n", name, origin.text, config::to_string(origin.source));
    }
  }
  return out;
}

}  // namespace gangrun::launch
