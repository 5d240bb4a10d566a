// ZE_AFFINITY_MASK and ZE_FLAT_DEVICE_HIERARCHY, read the way Intel's Level
// Zero driver (compute-runtime parseAffinityMask) reads them, after it has
// ordered the devices, and gangrun's strict reading, which refuses what the
// driver would silently skip, ignore or reorder.
//
// Pure functions: no environment access, no driver. The caller passes the
// cards (root devices) in the driver's order with the mask unset (the order
// ZE_ENABLE_PCI_ID_DEVICE_ORDER gives), each with its tile count
// (Device::tiles; 0 for a card without sub-devices, which counts as one
// leaf), and the hierarchy mode in force.
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

inline constexpr std::string_view k_ze_affinity_mask = "ZE_AFFINITY_MASK";
inline constexpr std::string_view k_ze_flat_device_hierarchy = "ZE_FLAT_DEVICE_HIERARCHY";

// COMPOSITE: a device is a card, its tiles are sub-devices. FLAT: every tile
// (leaf) is a device of its own, numbered card by card. COMBINED: devices are
// the leaves, as in FLAT, but sub-device and root queries still work; the
// mask reads as in FLAT.
enum class ZeHierarchy { composite, flat, combined };

std::string_view to_string(ZeHierarchy hierarchy);

// The mode the driver runs in: the value when it is exactly "FLAT",
// "COMPOSITE" or "COMBINED" (case-sensitive), otherwise driver_default (the
// Intel driver picks it per GPU family: FLAT for Data Center GPU Max).
ZeHierarchy ze_hierarchy(std::optional<std::string_view> value, ZeHierarchy driver_default);

// Strict: a set value the driver would ignore ("flat", "", "TILE") is an
// ErrorCode::usage error naming the variable and the default used instead.
Expected<ZeHierarchy> check_ze_hierarchy(std::optional<std::string_view> value,
                                         ZeHierarchy driver_default);

struct ZeVisibleDevice {
  std::size_t card = 0;  // position of the card in the unfiltered list
  // COMPOSITE: the card's tiles this device keeps, ascending; its sub-device
  // i is tiles[i]. Every tile when the whole card is selected; empty for a
  // card without tiles.
  // FLAT/COMBINED: the one tile this device is; empty for a card without
  // tiles.
  std::vector<std::uint32_t> tiles;
  bool operator==(const ZeVisibleDevice&) const = default;
};

struct ZeVisibility {
  // false: the mask is unset, empty or "default", and nothing is filtered.
  bool filtered = false;
  // What a child sees, in its order: device i is devices[i]. The mask never
  // reorders: this is always the driver's order.
  std::vector<ZeVisibleDevice> devices;
  // An entry the driver cannot read: std::stoul throws on a part of it (no
  // digits, an empty entry) or, under COMPOSITE, it has three parts and trips
  // an assertion. What the process then sees was never measured; devices is
  // empty.
  std::optional<std::string> driver_fails_on;
  // check_ze_affinity_mask only: the entries were not in ascending order,
  // which the driver accepts but does not honour (it keeps its own order).
  // Worth a warning, not an error: no device is lost.
  std::optional<std::string> order_note;
};

// Exactly what the driver exposes, silent behaviours included: numbers are
// read with std::stoul base 0 (spaces before, junk after, "0x1a" hex, "010"
// octal) and truncated to 32 bits; an entry past the end is skipped; a tile
// past the end is skipped; under FLAT/COMBINED every "X.Y" entry is ignored;
// duplicates and order do not matter; a trailing comma or dot is dropped.
ZeVisibility emulate_ze_affinity_mask(std::optional<std::string_view> value,
                                      const std::vector<Device>& cards, ZeHierarchy hierarchy);

// The same reading, but anything the driver would skip, ignore, misread,
// fail on or count once is an ErrorCode::usage error naming the variable,
// quoting the entry and saying what the driver would have done. Entries are
// plain decimals (spaces around them allowed): "X" or, under COMPOSITE,
// "X.Y"; each device at most once (a tile of a card already selected whole
// counts as a repeat). Entries out of ascending order are accepted with
// order_note set, since the driver shows the same devices in its own order.
// Unset, "" and "default" give every device.
Expected<ZeVisibility> check_ze_affinity_mask(std::optional<std::string_view> value,
                                              const std::vector<Device>& cards,
                                              ZeHierarchy hierarchy);

}  // namespace gangrun::accel
