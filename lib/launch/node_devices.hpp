// This node's accelerators for a launch or for `gangrun devices`: the probes
// (each vendor runtime in a short-lived child, probe/probe_runner.hpp; sysfs
// for ROCm), the kind of device the launch uses, how the inherited visibility
// variables show it to workers, and the devices the selection flags pick
// (docs/devices.md, "Accelerators").
//
// A launch that neither counts nor selects devices nor writes masks probes
// nothing (with no selection flag, shared mode passes the inherited
// visibility through).
#pragma once

#include "accel/device.hpp"
#include "accel/ze_affinity.hpp"
#include "config/options.hpp"
#include "placement/node_view.hpp"
#include "placement/selection.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::launch {

// What the probes found, unfiltered: CUDA without CUDA_VISIBLE_DEVICES,
// Level Zero cards (COMPOSITE, without ZE_AFFINITY_MASK), the KFD topology,
// the CPUs this process may run on. A backend not probed has no report.
struct NodeProbes {
  std::optional<accel::BackendReport> cuda;
  std::optional<accel::BackendReport> xpu;
  accel::ZeHierarchy xpu_default = accel::ZeHierarchy::composite;  // the driver's own mode
  std::optional<accel::BackendReport> rocm;
  std::optional<accel::BackendReport> cpu;
};

enum class ProbeScope {
  needed,  // what the options need: their --accelerator, or for auto the first kind present
  all,     // every backend (gangrun devices)
};

// True when the launch depends on devices: --nproc_per_node gpu|xpu|auto,
// --num_gpus, a selection flag, per-rank masks, UUID masks, or an
// --accelerator other than auto and cpu, or --numa_binding, or an accelerate
// line without a launcher mode (config/accelerate/accelerate_settings.hpp).
bool launch_needs_devices(const config::Options& options);

// Runs the probes scope asks for, each vendor runtime in a child of its own
// whose environment derives from env. Never fails: a backend that cannot be
// probed has a report saying why. Blocks for up to the probes' timeouts;
// any thread may call.
NodeProbes probe_node(const config::Options& options, const EnvMap& env, ProbeScope scope);

// The devices a launch places workers on.
struct NodeDevices {
  accel::DeviceKind kind = accel::DeviceKind::cpu;
  std::optional<placement::NodeView> view;  // nullopt for cpu
  std::vector<placement::Candidate> selected;
  std::optional<std::string> why_none;  // the probe's reason when the kind has no device
  // With --accelerator auto and no GPU of any kind (kind "cpu"): why each
  // probed kind has none, e.g. "CUDA: libcuda.so.1 not found".
  std::vector<std::string> gpus_not_found;
};

// Chooses the kind (--accelerator, or for auto the first of cuda, xpu, rocm
// with devices, else cpu), reads the inherited variables strictly and
// applies --gpu_ids / --include / --exclude / --num_gpus. Errors are
// ErrorCode::usage naming the variable or flag and the entry.
Expected<NodeDevices> node_devices(const config::Options& options, const EnvMap& env,
                                   const NodeProbes& probes);

// The view one probed kind gives (cuda, xpu, rocm); options matter
// only for an inherited list of MIG instances, which per-rank with one
// device each may split.
Expected<placement::NodeView> view_of(accel::DeviceKind kind, const NodeProbes& probes,
                                      const EnvMap& env, const config::Options& options);

// For a launch that probes nothing: what is wrong with an inherited
// CUDA_VISIBLE_DEVICES list of indices on its face (a repeat, junk after a
// number, a sign), which the runtime would silently turn into fewer GPUs or
// none. Whether an index exists needs a probe and is not judged.
std::optional<std::string> unprobed_cuda_warning(const EnvMap& env);

// Where sysfs is read: GANGRUN_SYSFS_ROOT (a fake tree in tests), else "/".
std::string sysfs_root(const EnvMap& env);

// The names this node answers to in a deepspeed NODE_SPEC.
std::vector<std::string> node_names();

}  // namespace gangrun::launch
