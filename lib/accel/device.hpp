// What gangrun knows about one accelerator, whichever runtime reported it.
// Backends (cuda, level_zero, rocm_sysfs, cpu) fill these in; visibility
// parsers and placement read them. Plain data, no behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::accel {

// The one list of device kinds: what a backend reports, what a launch
// places workers on, what --accelerator names (besides "auto").
enum class DeviceKind { cuda, xpu, rocm, hpu, npu, neuron, cpu };

// "cuda", "xpu", "rocm", "hpu", "npu", "neuron", "cpu": the word of the
// command line, the JSON reports and the dry run.
const char* to_string(DeviceKind kind);
// The kind a word of to_string() names; nullopt for any other text.
std::optional<DeviceKind> parse_device_kind(std::string_view word);
// For people: "CUDA", "Intel XPU", "AMD ROCm"; to_string() for the others.
const char* display_name(DeviceKind kind);

// PCI bus/device/function, compared as numbers (tools print the domain with
// 4 or 8 hex digits, in either case).
struct PciAddress {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  std::uint32_t function = 0;
  auto operator<=>(const PciAddress&) const = default;
};

struct Device {
  DeviceKind kind = DeviceKind::cuda;
  // The index the vendor runtime gives this device in the view it was
  // enumerated in (e.g. CUDA's ordinal under the CUDA_DEVICE_ORDER in force).
  int index = 0;
  std::string name;
  // The text form a visibility variable accepts: "GPU-xxxxxxxx-xxxx-..." or
  // "MIG-..." for CUDA, the 32-hex-digit UUID for Level Zero, "GPU-<hex>"
  // for ROCm. Empty when the runtime gives none.
  std::string uuid;
  std::optional<PciAddress> pci;
  std::uint64_t memory_bytes = 0;
  std::string architecture;  // "9.0" (CUDA compute capability), "gfx90a", ...
  int compute_units = 0;     // SMs, EUs or CUs
  int tiles = 0;             // Level Zero sub-devices; 0 when it has none
  bool mig = false;          // a CUDA MIG compute instance
};

// One backend's answer. A missing library or driver is not an error: the
// device list is empty and unavailable says why (shown with -v).
struct BackendReport {
  DeviceKind kind = DeviceKind::cuda;
  std::vector<Device> devices;
  std::optional<std::string> unavailable;
  std::string driver_version;  // "12.6", "1.3.26241", ... when known
};

}  // namespace gangrun::accel
