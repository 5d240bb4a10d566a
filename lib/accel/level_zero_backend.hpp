// Intel GPUs through Level Zero, loaded at run time; the types come from
// Debian's libze-dev, the code from libze_loader.so.1 when it is there.
//
// Like CUDA, Level Zero reads ZE_AFFINITY_MASK, ZE_FLAT_DEVICE_HIERARCHY
// and ZE_ENABLE_PCI_ID_DEVICE_ORDER once per process, at init: probe in a
// process that exists to probe (probe/probe_runner.hpp). Nothing here fails: a missing loader, no
// driver (the loader alone answers ZE_RESULT_ERROR_UNINITIALIZED) or a
// missing entry point give no devices and say why in `unavailable`.
#pragma once

#include "accel/device.hpp"
#include "util/env.hpp"

#include <chrono>
#include <string>

namespace gangrun::accel {

inline constexpr const char* k_default_level_zero_library = "libze_loader.so.1";

// env's GANGRUN_LEVEL_ZERO_LIBRARY, else "libze_loader.so.1".
std::string level_zero_library_path(const EnvMap& env);

// Probes in this process. Each Device: index in the order the loader gives
// (drivers, then their devices), name, uuid as 32 lower-case hex digits,
// pci from the PCI-properties extension when the driver has it, memory as
// the sum of its memory properties, compute_units = EU count, tiles = its
// sub-devices (0 in FLAT mode, where each tile is a device of its own).
BackendReport probe_level_zero(const EnvMap& env);

// How long gangrun waits for a Level Zero probe in a child before killing it.
inline constexpr std::chrono::milliseconds k_level_zero_probe_timeout{10'000};

}  // namespace gangrun::accel
