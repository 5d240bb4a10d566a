#include "launch/plan.hpp"

#include "logmux/prefix.hpp"

#include <fmt/format.h>

#include <sched.h>
#include <unistd.h>

#include <csignal>
#include <random>

namespace gangrun::launch {
namespace {

constexpr int k_default_multi_node_port = 29500;

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

Expected<int> workers_per_node(const config::Options& options) {
  if (options.nproc_per_node) {
    const config::ProcCount& count = *options.nproc_per_node;
    switch (count.kind) {
      case config::ProcCount::Kind::number:
        return count.number;
      case config::ProcCount::Kind::cpu:
      case config::ProcCount::Kind::automatic:
        // No accelerator detection yet: auto falls back to CPUs, as torchrun
        // does on a machine without devices.
        return usable_cpus();
      case config::ProcCount::Kind::gpu:
      case config::ProcCount::Kind::xpu:
        return fail(ErrorCode::usage,
                    "--nproc_per_node gpu/xpu needs accelerator detection, which this build of "
                    "gangrun does not have yet; give the number of workers instead");
    }
  }
  if (options.num_gpus) return *options.num_gpus;
  if (options.num_processes) return *options.num_processes / options.nnodes;
  return 1;
}

std::string random_run_id() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "localhost";
  return buffer;
}

config::Streams either(config::Streams a, config::Streams b) {
  return {a.out || b.out, a.err || b.err};
}

}  // namespace

std::string worker_dir(const std::string& run_dir, int attempt, int local_rank) {
  return fmt::format("{}/attempt_{}/{}", run_dir, attempt, local_rank);
}

Expected<LaunchPlan> make_plan(const config::Options& options, const EnvMap& host_env) {
  LaunchPlan plan;
  plan.options = options;
  plan.host_env = host_env;
  plan.host = host_name();
  plan.nnodes = options.nnodes;
  plan.node_rank = options.node_rank;
  plan.run_id = options.standalone ? random_run_id() : options.rdzv_id;

  auto per_node = workers_per_node(options);
  if (!per_node) return tl::unexpected(per_node.error());
  plan.local_world_size = *per_node;
  plan.world_size = plan.local_world_size * plan.nnodes;

  plan.master_addr = options.master_addr.value_or("127.0.0.1");
  plan.master_port = options.master_port;
  if (!plan.master_port && plan.nnodes > 1) plan.master_port = k_default_multi_node_port;

  auto program = resolve_program(options, host_env);
  if (!program) return tl::unexpected(program.error());
  plan.program = std::move(*program);

  switch (options.output) {
    case config::OutputMode::prefix:
      plan.prefix_output = true;
      break;
    case config::OutputMode::inherit:
      plan.prefix_output = false;
      break;
    case config::OutputMode::automatic:
      plan.prefix_output = plan.local_world_size > 1;
      break;
  }
  if (options.log_dir) plan.log_dir = *options.log_dir + "/" + plan.run_id;

  plan.teardown_signals.insert(options.signals_to_handle.begin(), options.signals_to_handle.end());
  if (plan.teardown_signals.empty()) plan.teardown_signals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  plan.parent_error_file = env_lookup(host_env, "TORCHELASTIC_ERROR_FILE");

  std::string prefix_template = options.log_prefix
                                    ? *options.log_prefix
                                    : env_lookup(host_env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
                                          .value_or(std::string(logmux::k_default_prefix_template));

  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    WorkerPlan worker;
    worker.local_rank = local_rank;
    worker.rank = plan.node_rank * plan.local_world_size + local_rank;
    worker.argv = substitute_local_rank(plan.program.argv, local_rank);
    worker.prefix = logmux::expand_prefix(
        prefix_template, {worker.rank, local_rank, plan.node_rank, options.role, plan.host});
    config::Streams redirected = options.redirects.for_local_rank(local_rank);
    config::Streams teed = options.tee.for_local_rank(local_rank);
    worker.to_file = either(redirected, teed);
    if (plan.log_dir) worker.to_file = {true, true};
    bool shown = !options.local_ranks_filter || options.local_ranks_filter->count(local_rank) != 0;
    // A tee'd stream is shown even when it is also redirected.
    worker.to_console = {shown && (!redirected.out || teed.out),
                         shown && (!redirected.err || teed.err)};
    plan.workers.push_back(std::move(worker));
  }
  return plan;
}

EnvMap worker_variables(const LaunchPlan& plan, const WorkerPlan& worker, int attempt,
                        const std::string& run_dir, const std::string& master_port) {
  auto inherited_or = [&](const char* name, const char* fallback) {
    return env_lookup(plan.host_env, name).value_or(fallback);
  };
  EnvMap vars = {
      {"LOCAL_RANK", std::to_string(worker.local_rank)},
      {"RANK", std::to_string(worker.rank)},
      {"GROUP_RANK", std::to_string(plan.node_rank)},
      {"ROLE_RANK", std::to_string(worker.rank)},
      {"ROLE_NAME", plan.options.role},
      {"LOCAL_WORLD_SIZE", std::to_string(plan.local_world_size)},
      {"WORLD_SIZE", std::to_string(plan.world_size)},
      {"GROUP_WORLD_SIZE", std::to_string(plan.nnodes)},
      {"ROLE_WORLD_SIZE", std::to_string(plan.world_size)},
      {"MASTER_ADDR", plan.master_addr},
      {"MASTER_PORT", master_port},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(attempt)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(plan.options.max_restarts)},
      {"TORCHELASTIC_RUN_ID", plan.run_id},
      // Workers are clients of the store gangrun hosts (launch/agent_store.hpp).
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_ERROR_FILE", worker_dir(run_dir, attempt, worker.local_rank) + "/error.json"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", inherited_or("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")},
      {"NCCL_ASYNC_ERROR_HANDLING", inherited_or("NCCL_ASYNC_ERROR_HANDLING", "1")},
  };
  if (auto threads = env_lookup(plan.host_env, "OMP_NUM_THREADS")) {
    vars["OMP_NUM_THREADS"] = *threads;
  } else if (plan.local_world_size > 1) {
    vars["OMP_NUM_THREADS"] = "1";
  }
  return vars;
}

}  // namespace gangrun::launch
