// AMD GPUs as the ROCm runtime numbers them, read from the KFD topology in
// sysfs: no ROCm library is needed (or loaded).
#pragma once

#include "accel/device.hpp"

#include <string>

namespace gangrun::accel {

// Reads ROOT/sys/class/kfd/kfd/topology/nodes/<N>/ (ROOT is "/" normally;
// GANGRUN_SYSFS_ROOT points tests at a fake tree). GPU nodes are the ones
// with SIMDs, in ascending node number, skipping those whose render node
// ROOT/dev/dri/renderD<minor> cannot be opened (ROCr drops them too, which
// is what a container with a subset of GPUs looks like). Devices are
// numbered 0.. in that order before any ROCR_VISIBLE_DEVICES filtering.
// No KFD topology means no AMD GPUs, with the reason in unavailable.
BackendReport probe_rocm_sysfs(const std::string& root);

// "gfx90a" from KFD's gfx_target_version (major*10000 + minor*100 +
// stepping, with minor and stepping printed as hex digits).
std::string gfx_name(unsigned long gfx_target_version);

}  // namespace gangrun::accel
