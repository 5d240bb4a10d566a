#include "launch/plan.hpp"

#include "config/option_names.hpp"
#include "launch/dialects/accelerate.hpp"
#include "launch/job_secret.hpp"
#include "launch/numa_cpus.hpp"
#include "launch/plan_checks.hpp"
#include "logmux/prefix.hpp"
#include "placement/masks.hpp"
#include "store/default_port.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <limits>
#include <random>

namespace gangrun::launch {
namespace {

// Why --nproc_per_node gpu/xpu found nothing to count: "no GPU found (CUDA:
// libcuda.so.1 not found; ...)", or what hides the devices of the kind in use.
std::string no_device_reason(const NodeDevices& devices, bool gpu) {
  if (devices.kind == accel::DeviceKind::cpu) {
    std::string reason = gpu ? "no GPU found" : "no Intel XPU found";
    if (!devices.gpus_not_found.empty()) {
      reason += " (" + strings::join(devices.gpus_not_found, "; ") + ")";
    } else {
      reason += " (--accelerator cpu looks for none)";
    }
    return reason;
  }
  std::string reason =
      std::string("no ") + accel::display_name(devices.kind) + " device is selected";
  if (devices.why_none) return reason + " (" + *devices.why_none + ")";
  if (devices.view && !devices.view->shaped_by.empty()) {
    const auto& [name, value] = devices.view->shaped_by.front();
    return reason + " (" + name + "=" + value + " hides every device)";
  }
  return reason;
}

Expected<int> workers_per_node(const config::Options& options,
                               const std::optional<NodeDevices>& devices) {
  std::size_t selected = devices ? devices->selected.size() : 0;
  if (options.nproc_per_node) {
    const config::ProcCount& count = *options.nproc_per_node;
    switch (count.kind) {
      case config::ProcCount::Kind::number:
        return count.number;
      case config::ProcCount::Kind::cpu:
        return host::usable_cpu_count();
      case config::ProcCount::Kind::automatic:
        // Devices if any, else CPUs, as torchrun does.
        return selected > 0 ? static_cast<int>(selected) : host::usable_cpu_count();
      case config::ProcCount::Kind::gpu:
      case config::ProcCount::Kind::xpu:
        if (selected == 0) {
          bool gpu = count.kind == config::ProcCount::Kind::gpu;
          return fail(ErrorCode::usage,
                      std::string("--nproc_per_node ") + (gpu ? "gpu" : "xpu") + ": " +
                          (devices ? no_device_reason(*devices, gpu) : "no device was probed") +
                          "; give the number of workers, or see gangrun devices");
        }
        return static_cast<int>(selected);
    }
  }
  if (options.num_gpus) return *options.num_gpus;
  if (options.num_processes) return *options.num_processes / options.nnodes;
  return 1;
}

// Level Zero shows a worker its devices in driver order whatever the mask
// says, so a mask that lists several must already be in that order.
Expected<void> check_driver_order(const std::vector<placement::Candidate>& devices,
                                  const std::string& variable) {
  for (std::size_t i = 1; i < devices.size(); ++i) {
    if (devices[i].device.index < devices[i - 1].device.index) {
      return fail(ErrorCode::usage,
                  "the selection puts device " + devices[i].token + " after " +
                      devices[i - 1].token + ", but " + variable +
                      " cannot reorder devices (Level Zero keeps its own order); select them in "
                      "ascending order, or give each worker one with --visible-devices per-rank");
    }
  }
  return {};
}

// Each worker's mask, as variables to set.
Expected<std::vector<EnvMap>> device_envs(const config::Options& options, const NodeDevices& node,
                                          int workers) {
  std::vector<EnvMap> envs(static_cast<std::size_t>(workers));
  if (!node.view) return envs;
  const placement::NodeView& view = *node.view;
  if (options.mask_format == config::MaskFormat::uuid && !view.uuid_masks) {
    return fail(ErrorCode::usage, "--mask-format uuid: " + view.variable +
                                      " has no UUID syntax; use --mask-format index");
  }
  placement::MaskSettings settings{
      .mode = options.visible_devices == config::VisibleDevices::per_rank
                  ? placement::VisibilityMode::per_rank
                  : placement::VisibilityMode::shared,
      .devices_per_proc = options.devices_per_proc,
      .format = options.mask_format == config::MaskFormat::uuid ? placement::MaskFormat::uuid
                                                                : placement::MaskFormat::token,
      .selection_given = options.gpu_ids || options.include || options.exclude || options.num_gpus};
  if (view.keeps_driver_order) {
    bool shared = settings.mode == placement::VisibilityMode::shared;
    std::size_t group =
        shared ? node.selected.size() : static_cast<std::size_t>(settings.devices_per_proc);
    for (std::size_t first = 0; first < node.selected.size();
         first += std::max<std::size_t>(group, 1)) {
      auto begin = node.selected.begin() + static_cast<long>(first);
      auto end =
          node.selected.begin() + static_cast<long>(std::min(first + group, node.selected.size()));
      auto ordered = check_driver_order({begin, end}, view.variable);
      if (!ordered) return tl::unexpected(ordered.error());
    }
  }
  auto masks = placement::worker_masks(node.selected, workers, settings, view.variable);
  if (!masks) return tl::unexpected(masks.error());
  for (std::size_t i = 0; i < masks->size(); ++i) {
    if (!(*masks)[i]) continue;
    envs[i] = view.alongside_mask;
    envs[i][view.variable] = *(*masks)[i];
  }
  return envs;
}

std::string random_run_id() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

config::Streams either(config::Streams a, config::Streams b) {
  return {a.out || b.out, a.err || b.err};
}

// "--nproc_per_node 500000", "--num_processes 8 over 2 nodes": where the
// worker count came from, for messages.
std::string worker_count_given(const config::Options& options, int per_node) {
  auto text = [&](std::string_view name) {
    auto origin = options.origins.find(std::string(name));
    return origin == options.origins.end() ? std::to_string(per_node) : origin->second.text;
  };
  if (options.nproc_per_node) return "--nproc_per_node " + text(config::opt::nproc_per_node);
  if (options.num_gpus) return "--num_gpus " + text(config::opt::num_gpus);
  if (options.num_processes) {
    return "--num_processes " + text(config::opt::num_processes) + " over " +
           std::to_string(options.nnodes) + " nodes";
  }
  return std::to_string(per_node) + " workers per node";
}

Expected<void> check_worker_count(const config::Options& options, int per_node,
                                  const ProcessCapacity& capacity) {
  std::string given = worker_count_given(options, per_node);
  if (static_cast<std::int64_t>(per_node) * options.nnodes > std::numeric_limits<int>::max()) {
    return fail(ErrorCode::usage,
                fmt::format("{}: {} workers per node on {} nodes is more than {} ranks in all; "
                            "give fewer workers or nodes",
                            given, per_node, options.nnodes, std::numeric_limits<int>::max()));
  }
  return check_process_capacity(per_node, given, capacity);
}

// Where the store's host name came from, for messages.
std::string master_addr_origin(const config::Options& options, bool c10d) {
  if (c10d) return "--rdzv_endpoint";
  auto it = options.origins.find(std::string(config::opt::master_addr));
  if (options.slurm_job && it != options.origins.end() &&
      it->second.source == config::Source::slurm) {
    return "the head node: " + slurm::head_node_origin(*options.slurm_job);
  }
  if (options.scheduler_job && it != options.origins.end() &&
      it->second.source == config::Source::scheduler) {
    return schedulers::head_origin(*options.scheduler_job);
  }
  return "--master_addr";
}

// Where the store's port came from, for messages: the option as the user
// spelled it, which an accelerate or deepspeed user knows by another name.
std::string master_port_origin(const config::Options& options, bool c10d) {
  if (c10d) return "--rdzv_endpoint";
  const config::Options::Origin* given = options.user_origin(config::opt::master_port);
  if (given == nullptr || given->where.empty()) return "--master_port";
  return given->where;
}

}  // namespace

Expected<PlacedWorkers> place_workers(const config::Options& options,
                                      const std::optional<NodeDevices>& devices) {
  auto per_node = workers_per_node(options, devices);
  if (!per_node) return tl::unexpected(per_node.error());
  PlacedWorkers placed{.workers = *per_node,
                       .device_envs = std::vector<EnvMap>(static_cast<std::size_t>(*per_node))};
  if (devices) {
    auto envs = device_envs(options, *devices, placed.workers);
    if (!envs) return tl::unexpected(envs.error());
    placed.device_envs = std::move(*envs);
  }
  return placed;
}

Expected<LaunchPlan> make_plan(const config::Options& options, const EnvMap& host_env,
                               std::optional<NodeDevices> devices,
                               const ProcessCapacity& capacity) {
  // Before anything proportional to the worker count is allocated.
  auto per_node = workers_per_node(options, devices);
  if (!per_node) return tl::unexpected(per_node.error());
  if (auto fits = check_worker_count(options, *per_node, capacity); !fits) {
    return tl::unexpected(fits.error());
  }

  LaunchPlan plan;
  plan.host_env = host_env;
  const auto& job = options.slurm_job;
  plan.host = job && job->node_name ? *job->node_name : host::host_name();
  plan.nnodes = options.nnodes;
  plan.node_rank = options.node_rank;
  plan.run_id = options.standalone ? random_run_id() : options.rdzv_id;
  plan.role = options.role;
  plan.dialects = dialects_from(options);
  plan.slurm_job = options.slurm_job;
  plan.scheduler_job = options.scheduler_job;
  plan.worker_per_task = options.worker_per_task;
  if (options.worker_per_task && job && job->local_id && job->tasks_on_node) {
    plan.srun_task =
        SrunTask{.local_id = job->local_id->value, .tasks_on_node = job->tasks_on_node->value};
  }
  // An MPI task as one worker: its place on the host, as srun's.
  const auto& task = options.scheduler_job;
  if (options.worker_per_task && task && task->local_rank && task->tasks_on_node) {
    plan.srun_task =
        SrunTask{.local_id = task->local_rank->value, .tasks_on_node = task->tasks_on_node->value};
  }
  plan.local_addr = options.local_addr;
  plan.store_limits = {.max_connections = options.max_connections,
                       .max_connections_per_address = options.max_connections_per_address,
                       .max_total_bytes = options.max_store_bytes,
                       .max_bytes_per_address = options.max_store_bytes_per_address};
  plan.rendezvous = options.rdzv_conf;
  plan.max_restarts = options.max_restarts;
  plan.failure_window_s = options.failure_window;
  plan.term_timeout_s = options.term_timeout;
  plan.report_path = options.report;
  plan.doctor.hang_timeout_s = options.hang_timeout;
  plan.doctor.arrival_timeout_s = options.arrival_timeout;
  plan.doctor.on_hang = options.on_hang;
  plan.doctor.stacks_at_failure = !options.no_stacks_at_failure;
  plan.doctor.straggler_interval_s = options.straggler_watch;
  plan.doctor.flight_recorder = options.flight_recorder;
  if (options.stack_tool) {
    auto tool = find_executable(*options.stack_tool, host_env, "stack tool");
    if (!tool) {
      // Named as the user gave it: the environment's variable is not the flag.
      const config::Options::Origin* origin = options.user_origin(config::opt::stack_tool);
      std::string where = origin && origin->source == config::Source::gangrun_env
                              ? "GANGRUN_STACK_TOOL"
                              : "--stack-tool";
      return fail_usage(where + ": " + tool.error().message() +
                        "; give the path of py-spy (pip install py-spy puts it beside the "
                        "environment's python)");
    }
    plan.doctor.stack_tool = std::move(*tool);
  }
  plan.option_origins = options.origins;
  plan.per_rank_visibility = options.visible_devices == config::VisibleDevices::per_rank;
  plan.virtual_local_rank = options.virtual_local_rank;

  auto placed = place_workers(options, devices);
  if (!placed) return tl::unexpected(placed.error());
  plan.local_world_size = placed->workers;
  std::vector<EnvMap>& masks = placed->device_envs;
  plan.devices = std::move(devices);
  settle_accelerate_mode(plan.dialects.accelerate, plan.devices);

  plan.master_addr = options.master_addr.value_or("127.0.0.1");
  plan.master_port = options.master_port;
  plan.c10d = options.rdzv_backend == config::RendezvousBackend::c10d;
  plan.min_nnodes = options.min_nnodes;
  plan.multi_node = plan.c10d || plan.nnodes > 1;
  if (plan.c10d && options.rdzv_endpoint) {
    // Agents and workers meet in the one store on the endpoint.
    plan.master_addr = options.rdzv_endpoint->host;
    plan.master_port = options.rdzv_endpoint->port;
  }
  plan.master_addr_origin = master_addr_origin(options, plan.c10d);
  plan.master_port_origin = master_port_origin(options, plan.c10d);
  if (!plan.master_port && plan.multi_node) plan.master_port = store::k_default_port;
  remove_job_secret(plan.host_env);
  if (plan.multi_node) {
    GANGRUN_TRY_ASSIGN(secret, read_job_secret(host_env));
    if (*secret) plan.job_secret = std::move((*secret)->value);
  }
  GANGRUN_TRY(check_virtual_local_rank(plan));

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
  plan.log_dir =
      options.log_dir;  // each run makes its own directory inside (launch/run_directory.hpp)

  plan.teardown_signals.insert(options.signals_to_handle.begin(), options.signals_to_handle.end());
  if (plan.teardown_signals.empty()) plan.teardown_signals = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  plan.parent_error_file = env_lookup(host_env, "TORCHELASTIC_ERROR_FILE");

  plan.prefix_template = options.log_prefix
                             ? *options.log_prefix
                             : env_lookup(host_env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")
                                   .value_or(std::string(logmux::k_default_prefix_template));

  GANGRUN_TRY_ASSIGN(starts,
                     worker_starts(plan.dialects, plan.program.argv, plan.local_world_size));
  plan.numa_binding = options.numa_binding;
  if (options.numa_binding) {
    std::vector<int> usable = host::usable_cpus();
    NumaRequest request{
        .mode = *options.numa_binding,
        .devices_per_worker = plan.per_rank_visibility ? options.devices_per_proc : 1,
        .first_local_rank = plan.srun_task ? plan.srun_task->local_id : 0,
        .sysfs_root = sysfs_root(host_env),
        .usable = {usable.begin(), usable.end()}};
    GANGRUN_TRY_ASSIGN(near, numa_worker_cpus(request, plan.devices, plan.local_world_size));
    // config allows no --bind_cores_to_rank beside it, so these were empty.
    for (std::size_t i = 0; i < starts->size(); ++i) (*starts)[i].cpus = std::move((*near)[i]);
  }
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    WorkerStart& start = (*starts)[static_cast<std::size_t>(local_rank)];
    WorkerPlan worker;
    worker.local_rank = local_rank;
    worker.device_env = std::move(masks[static_cast<std::size_t>(local_rank)]);
    worker.cpus = std::move(start.cpus);
    worker.argv = std::move(start.argv);
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

Expected<LaunchPlan> make_plan(const config::Options& options, const EnvMap& host_env,
                               std::optional<NodeDevices> devices) {
  return make_plan(options, host_env, std::move(devices), read_process_capacity());
}

RoundAssignment static_assignment(const LaunchPlan& plan, int restart_count,
                                  std::string master_port) {
  return RoundAssignment{.restart_count = restart_count,
                         .attempt = restart_count,
                         .group_rank = plan.node_rank,
                         .group_world_size = plan.nnodes,
                         .rank_offset = plan.node_rank * plan.local_world_size,
                         .world_size = plan.nnodes * plan.local_world_size,
                         .master_addr = plan.master_addr,
                         .master_port = std::move(master_port)};
}

std::string worker_prefix(const LaunchPlan& plan, const WorkerPlan& worker,
                          const RoundAssignment& round) {
  return logmux::expand_prefix(plan.prefix_template, {round.rank_of(worker), worker.local_rank,
                                                      round.group_rank, plan.role, plan.host});
}

}  // namespace gangrun::launch
