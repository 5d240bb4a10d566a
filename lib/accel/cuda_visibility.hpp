// CUDA_VISIBLE_DEVICES, read the way the CUDA runtime reads it (indices in
// CUDA_DEVICE_ORDER, or GPU-/MIG- UUID prefixes; devices in the order listed;
// the first invalid entry ends the list), and gangrun's strict reading of it,
// which refuses what the runtime would silently drop.
//
// Pure functions: no environment access, no driver. The caller passes the
// variable's value (nullopt when unset) and the devices in the unfiltered
// order: what cuInit enumerates with the variable unset, under the
// CUDA_DEVICE_ORDER the children will get. A device's position in that
// vector is the index an integer entry names.
//
// Where drivers were never measured (duplicates, MIG lists, spaces around a
// UUID), the emulation follows PyTorch's (torch/cuda/__init__.py and its
// tests).
#pragma once

#include "accel/device.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::accel {

inline constexpr std::string_view k_cuda_visible_devices = "CUDA_VISIBLE_DEVICES";

// What the first element decides: a value that starts with "GPU-" or "MIG-"
// is a list of UUIDs (or UUID prefixes), anything else a list of indices.
enum class CudaEntryForm { indices, gpu_uuids, mig_uuids };

// The value read on its own, before any device is known (PyTorch's
// _parse_visible_devices). Indices are read like strtoul in base 10 (spaces
// around an entry, a sign and trailing junk are accepted: "1gpu2" is 1, "-0"
// is 0); a negative or non-numeric entry ends the list; an entry that repeats
// an earlier one empties it. In a UUID list the first entry that does not
// start with the same prefix ends the list, and a repeated entry empties it.
struct CudaEntries {
  CudaEntryForm form = CudaEntryForm::indices;
  std::vector<std::uint64_t> indices;  // form == indices
  std::vector<std::string> uuids;      // otherwise: the UUIDs or prefixes as written
};
CudaEntries parse_cuda_visible_devices(std::string_view value);

struct CudaVisibleDevice {
  std::size_t position = 0;  // index into the unfiltered device list
  // The entry that selected it, without surrounding spaces ("2",
  // "GPU-8932f937"); empty when the variable is unset.
  std::string entry;
  bool operator==(const CudaVisibleDevice&) const = default;
};

struct CudaVisibility {
  bool set = false;  // false: the variable is unset and every device is visible
  // What a child sees, in its ordinal order: child device i is devices[i].
  std::vector<CudaVisibleDevice> devices;

  // Set, but selecting nothing ("" or "-1"): cuInit reports no device.
  bool hides_all() const { return set && devices.empty(); }
  std::vector<std::size_t> positions() const;
};

// Exactly what the runtime exposes, silent behaviours included: an index
// past the end, an unknown or ambiguous UUID prefix end the list; a
// duplicate (after resolution) empties it; of several MIG devices only the
// first is enumerated.
CudaVisibility emulate_cuda_visible_devices(std::optional<std::string_view> value,
                                            const std::vector<Device>& all);

// The same reading, but wherever the runtime would silently drop, truncate,
// empty or misread (junk after a number, a sign, a leading zero, an empty or
// non-numeric entry, an index past the end, an unknown or ambiguous prefix,
// a duplicate, mixed forms, spaces around a UUID, a second MIG device) it is
// an ErrorCode::usage error naming the variable, quoting the entry and saying
// what the runtime would have shown. Unset gives every device; "" and "-1"
// (the documented ways to hide all) give none and are not errors.
Expected<CudaVisibility> check_cuda_visible_devices(std::optional<std::string_view> value,
                                                    const std::vector<Device>& all);

}  // namespace gangrun::accel
