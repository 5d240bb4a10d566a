// HABANA_VISIBLE_MODULES, ASCEND_RT_VISIBLE_DEVICES and NEURON_RT_VISIBLE_CORES,
// each vendor's list of the devices a process may use, for the accelerators
// gangrun does not enumerate: Habana Gaudi (--accelerator hpu), Ascend NPUs
// (npu) and AWS NeuronCores (neuron). gangrun loads none of their runtimes;
// the value the user's variable holds is the node's device list, which
// gangrun splits among the workers and writes back, one mask per worker.
//
// Pure functions: no environment access. The caller passes the variable's
// value (nullopt when unset).
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::accel {

inline constexpr std::string_view k_habana_visible_modules = "HABANA_VISIBLE_MODULES";
inline constexpr std::string_view k_ascend_rt_visible_devices = "ASCEND_RT_VISIBLE_DEVICES";
inline constexpr std::string_view k_neuron_rt_visible_cores = "NEURON_RT_VISIBLE_CORES";

enum class VendorList {
  habana,  // HABANA_VISIBLE_MODULES: Gaudi module IDs (hl-smi -Q index,module_id)
  ascend,  // ASCEND_RT_VISIBLE_DEVICES: logical NPU IDs, ascending
  neuron,  // NEURON_RT_VISIBLE_CORES: NeuronCore indices, single or ranges
};

std::string_view variable_of(VendorList list);

// The largest ID or index gangrun accepts in these lists: far above any
// node's device count, low enough that a range cannot expand into millions
// of cores.
inline constexpr int k_max_vendor_id = 65535;

// The devices value names, one token per device in the order written, each a
// plain decimal number ("0", "13") as it goes into a worker's mask. Strict,
// since gangrun cannot check the IDs against hardware: every entry must be a
// decimal number from 0 to k_max_vendor_id without sign, spaces or leading
// zero, and no device may appear twice.
//   habana: a comma list of module IDs.
//   ascend: a comma list of IDs, strictly ascending (the runtime requires
//           it). A space is refused with what the runtime would read: it
//           stops reading at a space, and at the first invalid ID.
//   neuron: a comma list of indices and inclusive ranges "A-B" (A <= B), each
//           range expanded into its cores ("0-3" gives "0","1","2","3").
// Unset is an ErrorCode::usage error: gangrun cannot enumerate these devices,
// and the message tells the user to set the variable (with an example).
// Set but empty is zero devices, not an error. Every other error is
// ErrorCode::usage too, naming the variable, quoting the entry and saying
// how to fix it.
Expected<std::vector<std::string>> parse_vendor_list(VendorList list,
                                                     std::optional<std::string_view> value);

// One worker's mask from tokens parse_vendor_list gave (or some of them, in
// the same order): comma-joined. For neuron, a list of two or more cores
// that ascend contiguously is written as the range "A-B"; any other list
// stays a plain comma list, not a mix of ranges and single cores, because
// Neuron documents a single index, a range, or (as Ray writes it) a comma
// list, and never a mix. No tokens give "".
std::string join_vendor_mask(VendorList list, const std::vector<std::string>& tokens);

}  // namespace gangrun::accel
