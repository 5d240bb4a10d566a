#include "launch/plan.hpp"

#include "config/option_names.hpp"
#include "launch/dialects/accelerate.hpp"
#include "launch/doctor_plan.hpp"
#include "launch/job_plan.hpp"
#include "launch/network_plan.hpp"
#include "launch/plan_checks.hpp"
#include "launch/workers_plan.hpp"
#include "logmux/prefix.hpp"
#include "placement/masks.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
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
  GANGRUN_TRY_ASSIGN(per_node, workers_per_node(options, devices));
  GANGRUN_TRY(check_worker_count(options, *per_node, capacity));

  LaunchPlan plan;
  plan.host_env = host_env;
  plan.nnodes = options.nnodes;
  plan.node_rank = options.node_rank;
  plan.run_id = options.standalone ? random_run_id() : options.rdzv_id;
  plan.role = options.role;
  plan.dialects = dialects_from(options);
  plan_job(options, plan);
  plan.max_restarts = options.max_restarts;
  plan.failure_window_s = options.failure_window;
  plan.term_timeout_s = options.term_timeout;
  plan.report_path = options.report;
  plan.metrics_address = options.metrics_addr;
  plan.option_origins = options.origins;
  GANGRUN_TRY_ASSIGN(doctor, doctor_plan(options, host_env));
  plan.doctor = std::move(*doctor);

  GANGRUN_TRY_ASSIGN(placed, place_workers(options, devices));
  plan.local_world_size = placed->workers;
  plan.per_rank_visibility = options.visible_devices == config::VisibleDevices::per_rank;
  plan.virtual_local_rank = options.virtual_local_rank;
  plan.devices = std::move(devices);
  settle_accelerate_mode(plan.dialects.accelerate, plan.devices);
  GANGRUN_TRY(plan_network(options, host_env, plan));
  GANGRUN_TRY(check_virtual_local_rank(plan));

  GANGRUN_TRY_ASSIGN(program, resolve_program(options, host_env));
  plan.program = std::move(*program);
  plan_output(options, host_env, plan);
  GANGRUN_TRY(plan_workers(options, host_env, std::move(placed->device_envs), plan));
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
