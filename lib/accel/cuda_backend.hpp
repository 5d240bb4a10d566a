// NVIDIA GPUs through the CUDA driver API, loaded at run time.
//
// The driver reads CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER from the
// process environment once, at cuInit, and a process can never see a second
// view. So gangrun probes in a short-lived child (probe/probe_runner.hpp):
// gangrun re-executed with the given environment runs probe_cuda() and sends
// the report back as JSON. The launcher itself never initialises CUDA, and
// can ask for both the as-user view and the unfiltered view (the same
// environment without CUDA_VISIBLE_DEVICES).
//
// Nothing here fails: a missing library, a missing entry point, a failed
// cuInit (including CUDA_VISIBLE_DEVICES="" or no GPU, both code 100) all
// give a report with no devices and `unavailable` saying why.
#pragma once

#include "accel/cuda_api.hpp"
#include "accel/device.hpp"
#include "util/env.hpp"

#include <chrono>
#include <string>

namespace gangrun::accel {

inline constexpr const char* k_default_cuda_library = "libcuda.so.1";
// How long gangrun waits for a CUDA probe in a child before killing it.
inline constexpr std::chrono::milliseconds k_cuda_probe_timeout{10'000};

// env's GANGRUN_CUDA_LIBRARY, else "libcuda.so.1" (never bare libcuda.so,
// which in toolkit directories is the stub library).
std::string cuda_library_path(const EnvMap& env);

// Probes in this process. The library path comes from env, but the driver
// reads CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER from this process's real
// environment at cuInit, and only the first cuInit in a process counts: call
// it only in a process that exists to probe (probe/probe_mode.hpp).
// Once cuInit has run the library stays loaded until the process exits.
//
// Each Device: index = CUDA ordinal in this view; uuid "GPU-<8-4-4-4-12 hex>",
// or "MIG-..." with mig = true for a MIG compute instance (see the .cpp for
// how that is told); pci from the PCI domain/bus/device attributes with
// function 0 (the driver does not report it); architecture "major.minor"
// compute capability; compute_units = SM count. driver_version "major.minor"
// from cuDriverGetVersion, filled in even when cuInit fails.
BackendReport probe_cuda(const EnvMap& env);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (or "MIG-..."): the 16 bytes in
// order, lowercase hex, grouped 4-2-2-2-6, as nvidia-smi -L prints them and
// CUDA_VISIBLE_DEVICES accepts them.
std::string cuda_uuid_text(const cuda_api::CUuuid& uuid, bool mig);

// 12060 -> "12.6", 13000 -> "13.0" (cuDriverGetVersion's 1000*major + 10*minor).
std::string cuda_version_text(int version);

}  // namespace gangrun::accel
