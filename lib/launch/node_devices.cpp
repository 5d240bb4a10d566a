#include "launch/node_devices.hpp"

#include "accel/cpu_backend.hpp"
#include "accel/cuda_visibility.hpp"
#include "accel/rocm_sysfs.hpp"
#include "launch/job_secret.hpp"
#include "probe/probe_runner.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"

#include <unistd.h>

#include <algorithm>

namespace gangrun::launch {
namespace {

using config::Accelerator;

// CUDA enumerates one MIG instance per process at most, so the unfiltered
// probe cannot show the others; each MIG UUID the user listed is probed on
// its own and added.
accel::BackendReport probe_cuda_unfiltered(const EnvMap& env) {
  EnvMap unfiltered = env;
  unfiltered.erase(std::string(accel::k_cuda_visible_devices));
  accel::BackendReport report = probe::probe_cuda_in_child(unfiltered);
  auto inherited = env_lookup(env, std::string(accel::k_cuda_visible_devices));
  if (!inherited || report.devices.empty()) return report;
  for (const std::string& entry : strings::split(*inherited, ',')) {
    std::string_view uuid = strings::trim(entry);
    if (!uuid.starts_with("MIG-")) continue;
    EnvMap alone = unfiltered;
    alone[std::string(accel::k_cuda_visible_devices)] = uuid;
    for (accel::Device& device : probe::probe_cuda_in_child(alone).devices) {
      bool known = std::any_of(report.devices.begin(), report.devices.end(),
                               [&](const accel::Device& d) { return d.uuid == device.uuid; });
      if (known) continue;
      device.index = static_cast<int>(report.devices.size());
      report.devices.push_back(std::move(device));
    }
  }
  return report;
}

// The cards come from a COMPOSITE probe, which shows each card once with its
// tiles. When the user did not name a hierarchy and some card has tiles, a
// second probe under the driver's own default tells FLAT (more devices than
// cards) from COMPOSITE.
void probe_xpu(const EnvMap& env, NodeProbes& probes) {
  EnvMap unmasked = env;
  unmasked.erase(std::string(accel::k_ze_affinity_mask));
  EnvMap composite = unmasked;
  composite[std::string(accel::k_ze_flat_device_hierarchy)] = "COMPOSITE";
  probes.xpu = probe::probe_level_zero_in_child(composite);

  bool tiled = false;
  for (const accel::Device& card : probes.xpu->devices) tiled = tiled || card.tiles > 0;
  auto named = env.find(std::string(accel::k_ze_flat_device_hierarchy));
  bool user_named_mode =
      named != env.end() && accel::ze_hierarchy(named->second, accel::ZeHierarchy::composite) ==
                                accel::ze_hierarchy(named->second, accel::ZeHierarchy::flat);
  if (!tiled || user_named_mode) return;
  unmasked.erase(std::string(accel::k_ze_flat_device_hierarchy));
  accel::BackendReport by_default = probe::probe_level_zero_in_child(unmasked);
  if (by_default.devices.size() > probes.xpu->devices.size()) {
    probes.xpu_default = accel::ZeHierarchy::flat;
  }
}

bool has_devices(const std::optional<accel::BackendReport>& report) {
  return report && !report->devices.empty();
}

std::optional<accel::VendorList> vendor_list(Accelerator accelerator) {
  switch (accelerator) {
    case Accelerator::hpu:
      return accel::VendorList::habana;
    case Accelerator::npu:
      return accel::VendorList::ascend;
    case Accelerator::neuron:
      return accel::VendorList::neuron;
    default:
      return std::nullopt;
  }
}

// --accelerator, where --nproc_per_node xpu settles an auto.
Accelerator wanted_accelerator(const config::Options& options) {
  if (options.accelerator == Accelerator::automatic && options.nproc_per_node &&
      options.nproc_per_node->kind == config::ProcCount::Kind::xpu) {
    return Accelerator::xpu;
  }
  return options.accelerator;
}

// The accelerator the options ask for; auto resolved against the probes.
accel::DeviceKind chosen_kind(const config::Options& options, const NodeProbes& probes) {
  Accelerator accelerator = wanted_accelerator(options);
  if (accelerator != Accelerator::automatic) {
    // Every --accelerator word but "auto" is a device kind's word.
    return accel::parse_device_kind(config::to_string(accelerator))
        .value_or(accel::DeviceKind::cpu);
  }
  if (has_devices(probes.cuda)) return accel::DeviceKind::cuda;
  if (has_devices(probes.xpu)) return accel::DeviceKind::xpu;
  if (has_devices(probes.rocm)) return accel::DeviceKind::rocm;
  return accel::DeviceKind::cpu;
}

const std::optional<accel::BackendReport>& report_of(accel::DeviceKind kind,
                                                     const NodeProbes& probes) {
  static const std::optional<accel::BackendReport> none;
  switch (kind) {
    case accel::DeviceKind::cuda:
      return probes.cuda;
    case accel::DeviceKind::xpu:
      return probes.xpu;
    case accel::DeviceKind::rocm:
      return probes.rocm;
    default:
      return none;
  }
}

// One "CUDA: <reason>" per GPU kind probed, for a launch that found none.
std::vector<std::string> why_no_gpu(const NodeProbes& probes) {
  std::vector<std::string> reasons;
  auto add = [&](const char* name, const std::optional<accel::BackendReport>& report) {
    if (!report) return;
    if (report->unavailable) {
      reasons.push_back(std::string(name) + ": " + *report->unavailable);
    } else if (report->devices.empty()) {
      reasons.push_back(std::string(name) + ": no device");
    }
  };
  add(accel::display_name(accel::DeviceKind::cuda), probes.cuda);
  add(accel::display_name(accel::DeviceKind::xpu), probes.xpu);
  add(accel::display_name(accel::DeviceKind::rocm), probes.rocm);
  return reasons;
}

}  // namespace

bool launch_needs_devices(const config::Options& options) {
  using Kind = config::ProcCount::Kind;
  bool counts_devices = options.nproc_per_node && (options.nproc_per_node->kind == Kind::gpu ||
                                                   options.nproc_per_node->kind == Kind::xpu ||
                                                   options.nproc_per_node->kind == Kind::automatic);
  bool selects = options.num_gpus || options.gpu_ids || options.include || options.exclude;
  bool writes_masks = options.visible_devices == config::VisibleDevices::per_rank ||
                      options.mask_format == config::MaskFormat::uuid;
  bool names_kind =
      options.accelerator != Accelerator::automatic && options.accelerator != Accelerator::cpu;
  // --numa_binding: the workers' CPUs follow their accelerators. An
  // accelerate line without a launcher mode makes a multi-GPU or a multi-CPU
  // job by whether the workers get GPUs.
  return counts_devices || selects || writes_masks || names_kind || options.numa_binding ||
         options.accelerate.multi_process_without_mode;
}

NodeProbes probe_node(const config::Options& options, const EnvMap& job_env, ProbeScope scope) {
  // The probes are children: they get no job secret, as no worker does.
  EnvMap env = job_env;
  remove_job_secret(env);
  NodeProbes probes;
  Accelerator wanted =
      scope == ProbeScope::all ? Accelerator::automatic : wanted_accelerator(options);
  bool every = scope == ProbeScope::all;
  auto still_looking = [&] {
    return every || (wanted == Accelerator::automatic && !has_devices(probes.cuda) &&
                     !has_devices(probes.xpu) && !has_devices(probes.rocm));
  };
  if (wanted == Accelerator::cuda || still_looking()) probes.cuda = probe_cuda_unfiltered(env);
  if (wanted == Accelerator::xpu || still_looking()) probe_xpu(env, probes);
  if (wanted == Accelerator::rocm || still_looking()) {
    probes.rocm = accel::probe_rocm_sysfs(sysfs_root(env));
  }
  if (every || wanted == Accelerator::cpu || wanted == Accelerator::automatic) {
    probes.cpu = accel::probe_cpu();
  }
  return probes;
}

Expected<placement::NodeView> view_of(accel::DeviceKind kind, const NodeProbes& probes,
                                      const EnvMap& env, const config::Options& options) {
  const std::optional<accel::BackendReport>& report = report_of(kind, probes);
  std::vector<accel::Device> devices = report ? report->devices : std::vector<accel::Device>{};
  bool one_device_each =
      options.visible_devices == config::VisibleDevices::per_rank && options.devices_per_proc == 1;
  if (kind == accel::DeviceKind::cuda) return placement::cuda_view(devices, env, one_device_each);
  if (kind == accel::DeviceKind::rocm) return placement::rocm_view(devices, env);
  if (kind == accel::DeviceKind::xpu) {
    auto hierarchy = placement::ze_hierarchy_in_force(env, probes.xpu_default);
    if (!hierarchy) return tl::unexpected(hierarchy.error());
    return placement::xpu_view(devices, *hierarchy, env);
  }
  return fail_usage(std::string("no device view for accelerator ") + accel::to_string(kind));
}

std::optional<std::string> unprobed_cuda_warning(const EnvMap& env) {
  auto value = env_lookup(env, std::string(accel::k_cuda_visible_devices));
  if (!value || value->empty()) return std::nullopt;
  accel::CudaEntries entries = accel::parse_cuda_visible_devices(*value);
  if (entries.form != accel::CudaEntryForm::indices) return std::nullopt;
  // Enough stand-in GPUs that every index read is in range: only the
  // entries' form is judged.
  std::uint64_t highest = 0;
  for (const std::string& entry : strings::split(*value, ',')) {
    if (auto number = strings::parse_int(strings::trim(entry)); number && *number > 0) {
      highest = std::max(highest, static_cast<std::uint64_t>(*number));
    }
  }
  if (highest > 4096) return std::nullopt;
  std::vector<accel::Device> stand_ins(highest + 1);
  for (std::size_t i = 0; i < stand_ins.size(); ++i) {
    stand_ins[i].index = static_cast<int>(i);
    stand_ins[i].uuid = "GPU-stand-in-" + std::to_string(i);
  }
  auto checked = accel::check_cuda_visible_devices(*value, stand_ins);
  if (checked) return std::nullopt;
  return checked.error().message();
}

std::string sysfs_root(const EnvMap& env) {
  return env_lookup(env, "GANGRUN_SYSFS_ROOT").value_or("/");
}

std::vector<std::string> node_names() {
  std::vector<std::string> names = {"localhost"};
  std::string host = host::host_name();
  if (host == "localhost") return names;
  names.push_back(host);
  if (auto dot = host.find('.'); dot != std::string::npos) names.push_back(host.substr(0, dot));
  return names;
}

Expected<NodeDevices> node_devices(const config::Options& options, const EnvMap& env,
                                   const NodeProbes& probes) {
  NodeDevices node;
  node.kind = chosen_kind(options, probes);
  placement::SelectionFlags flags{.gpu_ids = options.gpu_ids,
                                  .include = options.include,
                                  .exclude = options.exclude,
                                  .num_gpus = options.num_gpus};
  if (node.kind == accel::DeviceKind::cpu) {
    node.gpus_not_found = why_no_gpu(probes);
    if (flags.any() || options.visible_devices == config::VisibleDevices::per_rank) {
      return fail(ErrorCode::usage,
                  "device selection (--gpu_ids, --include/--exclude, --num_gpus, "
                  "--visible-devices per-rank) needs accelerators, but the launch runs on CPUs "
                  "(--accelerator " +
                      std::string(config::to_string(options.accelerator)) +
                      (options.accelerator == Accelerator::automatic
                           ? ", and no CUDA, Intel XPU or AMD GPU was found; 'gangrun devices' "
                             "says why"
                           : "") +
                      ")");
    }
    return node;
  }
  if (auto list = vendor_list(options.accelerator)) {
    auto view = placement::vendor_list_view(*list, env);
    if (!view) return tl::unexpected(view.error());
    node.view = std::move(*view);
  } else {
    auto view = view_of(node.kind, probes, env, options);
    if (!view) return tl::unexpected(view.error());
    node.view = std::move(*view);
    const auto& report = report_of(node.kind, probes);
    if (report && report->unavailable) node.why_none = report->unavailable;
  }
  auto selected = placement::select_devices(node.view->visible, flags, node_names());
  if (!selected) return tl::unexpected(selected.error());
  node.selected = std::move(*selected);
  return node;
}

}  // namespace gangrun::launch
