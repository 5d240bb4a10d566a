// One kind of accelerator as this node's workers would see it, given the
// devices a probe found in the unfiltered view and the visibility variables
// gangrun inherited (docs/devices.md, "Accelerators"). Pure: the caller probes and
// passes the environment; nothing here reads the process environment or a
// driver.
//
// Every view is read strictly (accel/*_visibility.hpp): a variable the
// runtime would silently truncate, empty or misread is an ErrorCode::usage
// error naming the variable and the entry.
#pragma once

#include "accel/device.hpp"
#include "accel/vendor_lists.hpp"
#include "accel/ze_affinity.hpp"
#include "placement/selection.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::placement {

struct NodeView {
  accel::DeviceKind kind = accel::DeviceKind::cuda;
  std::string variable;  // the variable worker masks are written into
  // What a worker inheriting gangrun's environment sees, in its order:
  // candidates[i] is the device it calls i, with the token that names it in
  // `variable`'s index space.
  std::vector<Candidate> visible;
  // The inherited variables that shaped the view ("CUDA_DEVICE_ORDER" ->
  // "PCI_BUS_ID"), in a fixed order; only those that are set.
  std::vector<std::pair<std::string, std::string>> shaped_by;
  // Accepted but worth a warning (a ZE_AFFINITY_MASK out of driver order).
  std::vector<std::string> notes;
  // Set next to every mask gangrun writes, so the mask means in the worker
  // what it meant when gangrun computed it (ZE_FLAT_DEVICE_HIERARCHY).
  EnvMap alongside_mask;
  // Level Zero cannot reorder devices: a mask listing several is always
  // read in driver order, so a selection must keep that order.
  bool keeps_driver_order = false;
  bool uuid_masks = true;  // the variable accepts UUIDs (--mask-format uuid)
};

// CUDA: `unfiltered` is what cuInit enumerates with CUDA_VISIBLE_DEVICES
// unset and CUDA_DEVICE_ORDER as the workers get it, plus any MIG instance
// an inherited MIG UUID names (a process enumerates only its first MIG
// device, so those are probed one by one). Tokens are the entries of
// CUDA_VISIBLE_DEVICES as written, or the ordinals when it is unset.
//
// An inherited list of several MIG UUIDs is refused, since one process
// would use only the first, unless one_mig_per_worker: then each entry is
// read on its own, for a launch that gives every worker one of them.
Expected<NodeView> cuda_view(const std::vector<accel::Device>& unfiltered, const EnvMap& env,
                             bool one_mig_per_worker = false);

// The Level Zero hierarchy the workers run under: ZE_FLAT_DEVICE_HIERARCHY
// when it names a mode (strictly: another value is an error), else
// driver_default.
Expected<accel::ZeHierarchy> ze_hierarchy_in_force(const EnvMap& env,
                                                   accel::ZeHierarchy driver_default);

// Intel XPUs: `cards` are the root devices in driver order with
// ZE_AFFINITY_MASK unset (each with its tile count). Tokens are what a
// worker's ZE_AFFINITY_MASK must hold to select the device: a flat index
// under FLAT/COMBINED, "card" or "card.tile,..." under COMPOSITE.
Expected<NodeView> xpu_view(const std::vector<accel::Device>& cards, accel::ZeHierarchy hierarchy,
                            const EnvMap& env);

// AMD GPUs in ROCr's unfiltered order (KFD topology). Masks go into
// HIP_VISIBLE_DEVICES when the user set it (or CUDA_VISIBLE_DEVICES, HIP's
// fallback), with indices relative to what ROCR_VISIBLE_DEVICES leaves;
// otherwise into ROCR_VISIBLE_DEVICES, with unfiltered indices.
Expected<NodeView> rocm_view(const std::vector<accel::Device>& gpus, const EnvMap& env);

// Gaudi, Ascend, Neuron: not enumerated; the inherited variable is the list.
Expected<NodeView> vendor_list_view(accel::VendorList list, const EnvMap& env);

}  // namespace gangrun::placement
