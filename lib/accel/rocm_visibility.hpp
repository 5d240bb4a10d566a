// ROCR_VISIBLE_DEVICES and then HIP_VISIBLE_DEVICES (or, when that is unset
// or empty, CUDA_VISIBLE_DEVICES), read the way ROCr and HIP read them (ROCr
// filters first; HIP's entries index what ROCr left), and gangrun's strict
// reading, which refuses what either would silently drop, skip or truncate.
//
// Pure functions: no environment access, no sysfs. The caller passes the
// variables' values (nullopt when unset) and the GPUs in ROCr's unfiltered
// order: KFD topology nodes with compute cores, by ascending node number,
// that the process may open. Device::uuid is "GPU-<16 hex digits>" (empty
// when the KFD unique_id is 0).
//
// Meant for nodes with AMD GPUs: on a node without any, every index in these
// variables is past the end.
#pragma once

#include "accel/device.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace gangrun::accel {

inline constexpr std::string_view k_rocr_visible_devices = "ROCR_VISIBLE_DEVICES";
inline constexpr std::string_view k_hip_visible_devices = "HIP_VISIBLE_DEVICES";

struct RocmVariables {
  std::optional<std::string_view> rocr_visible_devices;
  std::optional<std::string_view> hip_visible_devices;
  std::optional<std::string_view> cuda_visible_devices;  // HIP's fallback
};

struct RocmVisibility {
  bool filtered = false;  // false: nothing narrowed the list
  // What a HIP child sees, in its ordinal order: device i is devices[i], a
  // position in the list the function was given.
  std::vector<std::size_t> devices;

  bool hides_all() const { return filtered && devices.empty(); }
};

// ROCr alone (every ROCm component sees this). Set but empty hides every
// GPU. Tokens are upper-cased and trimmed, and only min(#GPUs, #tokens) of
// them are read. A token starting with G is a UUID prefix of 5 to 20
// characters that must match exactly one GPU; any other goes through strtol
// base 0 and must be used whole ("0x1" is 1, "010" is 8, "1a" is invalid).
// An invalid, out-of-range or repeated token ends the list; the list may
// reorder. An empty token is taken as invalid (the source leaves it unclear).
RocmVisibility emulate_rocr_visible_devices(std::optional<std::string_view> value,
                                            const std::vector<Device>& all);

// HIP alone, over the GPUs ROCr left (after_rocr; positions index into it).
// Unset or empty filters nothing. A token containing "GPU-" picks the first
// GPU whose UUID contains it (case-sensitive); any other must be a decimal
// that round-trips through atoi (no spaces, sign or leading zero). An invalid
// or out-of-range token ends the list; a repeated one is skipped; a trailing
// comma is ignored.
RocmVisibility emulate_hip_visible_devices(std::optional<std::string_view> value,
                                           const std::vector<Device>& after_rocr);

// Both in sequence, as a HIP program sees them; positions index into all.
RocmVisibility emulate_rocm_visibility(const RocmVariables& variables,
                                       const std::vector<Device>& all);

// The same reading, but whatever ROCr or HIP would silently drop, skip,
// truncate or misread (an empty entry, a sign, hex, octal, spaces HIP
// rejects, an index past the end, an unknown or ambiguous UUID, a
// duplicate), and a set-but-empty HIP_VISIBLE_DEVICES or
// CUDA_VISIBLE_DEVICES that HIP would take as unset while GPUs remain, is an
// ErrorCode::usage error naming the variable, quoting the entry and saying
// what the runtime would have shown. An empty ROCR_VISIBLE_DEVICES and a
// HIP_VISIBLE_DEVICES of "-1" hide every GPU and are not errors.
Expected<RocmVisibility> check_rocm_visibility(const RocmVariables& variables,
                                               const std::vector<Device>& all);

}  // namespace gangrun::accel
