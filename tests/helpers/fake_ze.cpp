// A stand-in for the Level Zero loader, libze_loader.so.1, with one Intel
// GPU driver behind it, built as a real shared library so the tests exercise
// gangrun's dlopen path. It exports the entry points gangrun binds (plus
// zeDriverGetProperties), with the signatures of Debian's
// <level_zero/ze_api.h>, and describes a scripted machine. It links no
// gangrun code: it plays the driver, so its ordering, hierarchy and
// ZE_AFFINITY_MASK handling is written independently of lib/accel, after
// Intel's compute-runtime (sortNeoDevices, parseAffinityMask).
//
// Environment, read once, at the first zeInit, as the driver reads it:
//   FAKE_ZE_MACHINE    JSON file:
//     {"driver_version": "1.3.29735",       // zeDriverGetProperties: a.b.c as
//                                           //   a << 24 | b << 16 | c
//      "default_hierarchy": "FLAT",         // the driver's own default;
//                                           //   COMPOSITE when absent
//      "pci_ext": true,                     // false: zeDevicePciGetPropertiesExt
//                                           //   is ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
//      "cards": [{"name": "Intel(R) Data Center GPU Max 1550",
//                 "uuid": "32 hex digits (dashes ignored)",
//                 "pci": "0000:3a:00.0", "memory": 68719476736, "eus": 896,
//                 "integrated": false,      // optional
//                 "device_id": 3029,        // optional (0x0bd5)
//                 "tiles": [{"uuid": "...", "memory": 34359738368, "eus": 448,
//                            "name": "..."}, ...]}]}   // tile name: the card's
//     "tiles" is omitted (or []) for a card without sub-devices: the driver
//     makes sub-devices only for two tiles or more, so a list of one is
//     refused as a broken fixture.
//     Unset: the loader finds no driver, and zeInit answers
//     ZE_RESULT_ERROR_UNINITIALIZED, as the real one does on a machine
//     without Intel's GPU driver.
//   ZE_ENABLE_PCI_ID_DEVICE_ORDER  "1": cards strictly in PCI order; anything
//                      else: discrete cards first, then PCI order. The JSON
//                      order never matters: the driver always sorts.
//   ZE_FLAT_DEVICE_HIERARCHY  exactly "FLAT", "COMPOSITE" or "COMBINED";
//                      anything else: the machine's default_hierarchy.
//                      COMPOSITE: a device per card, its kept tiles as
//                      sub-devices (flagged SUBDEVICE). FLAT: a device per
//                      leaf (tile, or card without tiles), no sub-devices,
//                      no SUBDEVICE flag. COMBINED: the leaves as in FLAT,
//                      but a tile keeps its SUBDEVICE flag.
//   ZE_AFFINITY_MASK   unset, "" or "default": every device. Otherwise split
//                      on ',' then '.' (no piece after a trailing
//                      separator), numbers read with std::stoul base 0 and
//                      truncated to 32 bits; an entry whose first number is
//                      past the end is skipped. COMPOSITE: "X" is card X,
//                      "X.Y" tile Y of card X (a tile past the end is
//                      skipped; a card without tiles has one, tile 0).
//                      FLAT/COMBINED: "X" is leaf X counted card by card,
//                      any "X.Y" is ignored. A bitset: duplicates and order
//                      do not matter, devices keep the driver's order and
//                      are numbered from 0.
//   FAKE_ZE_FAIL_INIT  zeInit returns this code (strtoul base 0: "0x70000001").
//
// Choices where the real behaviour was not measured: an entry std::stoul
// throws on (no digits, "" from ",,") and a three-part COMPOSITE entry (an
// assertion in the driver) make zeInit return ZE_RESULT_ERROR_UNKNOWN. A
// machine file that cannot be read does too, with a line on stderr (a broken
// fixture should be loud). A driver left with no device (no cards, or a mask
// that selects none) does not initialise, so zeInit answers
// ZE_RESULT_ERROR_UNINITIALIZED. A COMPOSITE card that keeps only some of its
// tiles reports the sum of their memory and EUs. A sub-device's subdeviceId
// is its physical tile number; its handle's position is the renumbered one.
//
// Handles point at objects this library owns, so they are distinct and never
// null. Every entry point checks what it is given, more strictly than the
// real driver (which leaves that to the validation layer): a null handle is
// ZE_RESULT_ERROR_INVALID_NULL_HANDLE, a handle it never gave out (or a
// driver handle where a device belongs) is ZE_RESULT_ERROR_INVALID_ARGUMENT,
// a null pointer is ZE_RESULT_ERROR_INVALID_NULL_POINTER, and a struct whose
// stype is wrong or whose pNext is not null is
// ZE_RESULT_ERROR_INVALID_ARGUMENT, so a caller bug shows in the tests.
#include <nlohmann/json.hpp>

#include <level_zero/ze_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#define FAKE_ZE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Uuid = std::array<std::uint8_t, ZE_MAX_DEVICE_UUID_SIZE>;

enum class Hierarchy { composite, flat, combined };

struct PciBdf {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  std::uint32_t function = 0;
};

struct Tile {
  std::string name;
  Uuid uuid{};
  std::uint64_t memory = 0;
  std::uint32_t eus = 0;
};

struct Card {
  std::string name;
  Uuid uuid{};
  PciBdf pci;
  std::uint64_t memory = 0;
  std::uint32_t eus = 0;
  bool integrated = false;
  std::uint32_t device_id = 0x0bd5;
  std::vector<Tile> tiles;  // empty: no sub-devices, one leaf
  std::size_t leaves() const { return tiles.empty() ? 1 : tiles.size(); }
};

struct Machine {
  std::uint32_t driver_version = (1U << 24) | (3U << 16) | 29735U;
  Hierarchy default_hierarchy = Hierarchy::composite;
  bool pci_ext = true;
  std::vector<Card> cards;
};

}  // namespace

// The handle types the header leaves opaque. Only this library defines them.
struct _ze_driver_handle_t {
  std::uint32_t driver_version = 0;
};

struct _ze_device_handle_t {
  std::string name;
  Uuid uuid{};
  PciBdf pci;
  std::uint64_t memory = 0;
  std::uint32_t eus = 0;
  std::uint32_t slices = 1;  // tiles behind it, for the EU split
  std::uint32_t device_id = 0;
  bool integrated = false;
  std::optional<std::uint32_t> subdevice_id;  // set: flagged SUBDEVICE
  std::vector<_ze_device_handle_t*> sub_devices;
};

namespace {

struct State {
  std::mutex mutex;
  std::optional<ze_result_t> init_result;  // the first zeInit's answer, kept
  bool pci_ext = true;
  std::unique_ptr<_ze_driver_handle_t> driver;
  std::vector<std::unique_ptr<_ze_device_handle_t>> all_devices;  // roots and sub-devices
  std::vector<_ze_device_handle_t*> devices;                      // what zeDeviceGet lists
};

State& state() {
  static State instance;
  return instance;
}

// ---- the machine file ----------------------------------------------------------

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Uuid parse_uuid(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c != '-') digits += c;
  }
  if (digits.size() != 2 * Uuid{}.size()) {
    throw std::runtime_error("uuid \"" + text + "\" is not 16 bytes");
  }
  Uuid uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    int high = hex_digit(digits[2 * i]);
    int low = hex_digit(digits[2 * i + 1]);
    if (high < 0 || low < 0) throw std::runtime_error("uuid \"" + text + "\" is not hex");
    uuid[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return uuid;
}

std::optional<Hierarchy> hierarchy_named(const std::string& name) {
  if (name == "COMPOSITE") return Hierarchy::composite;
  if (name == "FLAT") return Hierarchy::flat;
  if (name == "COMBINED") return Hierarchy::combined;
  return std::nullopt;
}

std::uint32_t parse_driver_version(const std::string& text) {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned build = 0;
  if (std::sscanf(text.c_str(), "%u.%u.%u", &major, &minor, &build) != 3 || major > 0xff ||
      minor > 0xff || build > 0xffff) {
    throw std::runtime_error("driver_version \"" + text + "\" is not a.b.c (255.255.65535)");
  }
  return (major << 24) | (minor << 16) | build;
}

PciBdf parse_pci(const std::string& text) {
  PciBdf pci;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &pci.domain, &pci.bus, &pci.device, &pci.function) !=
      4) {
    throw std::runtime_error("pci \"" + text + "\" is not dddd:bb:dd.f");
  }
  return pci;
}

Card parse_card(const nlohmann::json& in) {
  Card card;
  card.name = in.at("name").get<std::string>();
  card.uuid = parse_uuid(in.at("uuid").get<std::string>());
  card.pci = parse_pci(in.at("pci").get<std::string>());
  card.memory = in.at("memory").get<std::uint64_t>();
  card.eus = in.at("eus").get<std::uint32_t>();
  card.integrated = in.value("integrated", false);
  card.device_id = in.value("device_id", card.device_id);
  for (const nlohmann::json& entry : in.value("tiles", nlohmann::json::array())) {
    Tile tile;
    tile.name = entry.value("name", card.name);
    tile.uuid = parse_uuid(entry.at("uuid").get<std::string>());
    tile.memory = entry.at("memory").get<std::uint64_t>();
    tile.eus = entry.at("eus").get<std::uint32_t>();
    card.tiles.push_back(std::move(tile));
  }
  if (card.tiles.size() == 1) {
    throw std::runtime_error(R"(card ")" + card.name +
                             R"(" has one tile: omit "tiles" for a card without sub-devices)");
  }
  return card;
}

Machine parse_machine(const nlohmann::json& in) {
  Machine machine;
  if (in.contains("driver_version")) {
    machine.driver_version = parse_driver_version(in.at("driver_version").get<std::string>());
  }
  if (in.contains("default_hierarchy")) {
    std::string name = in.at("default_hierarchy").get<std::string>();
    std::optional<Hierarchy> hierarchy = hierarchy_named(name);
    if (!hierarchy) throw std::runtime_error("default_hierarchy \"" + name + "\" is unknown");
    machine.default_hierarchy = *hierarchy;
  }
  machine.pci_ext = in.value("pci_ext", true);
  for (const nlohmann::json& entry : in.at("cards")) machine.cards.push_back(parse_card(entry));
  return machine;
}

// nullopt when FAKE_ZE_MACHINE is unset; throws (a broken fixture) when the
// file cannot be read.
std::optional<Machine> load_machine() {
  const char* path = std::getenv("FAKE_ZE_MACHINE");
  if (path == nullptr) return std::nullopt;
  std::ifstream file(path);
  if (!file) throw std::runtime_error(std::string("FAKE_ZE_MACHINE=") + path + ": cannot open");
  try {
    return parse_machine(nlohmann::json::parse(file));
  } catch (const std::exception& error) {
    throw std::runtime_error(std::string("FAKE_ZE_MACHINE=") + path + ": " + error.what());
  }
}

// ---- the driver's view: order, hierarchy, then ZE_AFFINITY_MASK -------------

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

void sort_cards(std::vector<Card>& cards) {
  bool pci_only = environment("ZE_ENABLE_PCI_ID_DEVICE_ORDER") == "1";
  std::stable_sort(cards.begin(), cards.end(), [pci_only](const Card& a, const Card& b) {
    auto key = [pci_only](const Card& card) {
      return std::make_tuple(pci_only ? false : card.integrated, card.pci.domain, card.pci.bus,
                             card.pci.device, card.pci.function);
    };
    return key(a) < key(b);
  });
}

// The mask fails inside the driver: std::stoul threw, or an assertion.
struct MaskFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// std::getline pieces: "a,,b" has an empty middle piece, "a," has none after.
std::vector<std::string> pieces(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::istringstream stream(text);
  for (std::string piece; std::getline(stream, piece, separator);) out.push_back(piece);
  return out;
}

std::uint32_t mask_number(const std::string& entry, const std::string& text) {
  try {
    return static_cast<std::uint32_t>(std::stoul(text, nullptr, 0));
  } catch (const std::logic_error&) {
    throw MaskFailure("std::stoul throws on entry \"" + entry + "\"");
  }
}

// selected[card][leaf]: which leaves the mask keeps.
using Selection = std::vector<std::vector<bool>>;

Selection apply_mask(const std::vector<Card>& cards, Hierarchy hierarchy) {
  std::string mask = environment("ZE_AFFINITY_MASK");
  bool unfiltered = mask.empty() || mask == "default";
  Selection selected;
  std::vector<std::pair<std::size_t, std::size_t>> flat_leaves;  // card, leaf
  for (std::size_t c = 0; c < cards.size(); ++c) {
    selected.emplace_back(cards[c].leaves(), unfiltered);
    for (std::size_t leaf = 0; leaf < cards[c].leaves(); ++leaf) flat_leaves.emplace_back(c, leaf);
  }
  if (unfiltered) return selected;
  for (const std::string& entry : pieces(mask, ',')) {
    std::vector<std::string> parts = pieces(entry, '.');
    if (parts.empty()) throw MaskFailure("std::stoul throws on the empty entry");
    std::uint32_t first = mask_number(entry, parts[0]);
    if (hierarchy != Hierarchy::composite) {
      if (first >= flat_leaves.size() || parts.size() > 1) continue;
      auto [card, leaf] = flat_leaves[first];
      selected[card][leaf] = true;
      continue;
    }
    if (first >= cards.size()) continue;
    std::vector<bool>& leaves = selected[first];
    if (parts.size() == 1) {
      leaves.assign(leaves.size(), true);
      continue;
    }
    if (parts.size() > 2) throw MaskFailure("entry \"" + entry + "\" trips an assertion");
    std::uint32_t tile = mask_number(entry, parts[1]);
    if (tile < leaves.size()) leaves[tile] = true;
  }
  return selected;
}

_ze_device_handle_t card_device(const Card& card) {
  _ze_device_handle_t device;
  device.name = card.name;
  device.uuid = card.uuid;
  device.pci = card.pci;
  device.memory = card.memory;
  device.eus = card.eus;
  device.slices = static_cast<std::uint32_t>(card.leaves());
  device.device_id = card.device_id;
  device.integrated = card.integrated;
  return device;
}

_ze_device_handle_t tile_device(const Card& card, std::size_t t, bool flagged) {
  _ze_device_handle_t device = card_device(card);
  device.name = card.tiles[t].name;
  device.uuid = card.tiles[t].uuid;
  device.memory = card.tiles[t].memory;
  device.eus = card.tiles[t].eus;
  device.slices = 1;
  if (flagged) device.subdevice_id = static_cast<std::uint32_t>(t);
  return device;
}

_ze_device_handle_t* keep(State& s, _ze_device_handle_t device) {
  s.all_devices.push_back(std::make_unique<_ze_device_handle_t>(std::move(device)));
  return s.all_devices.back().get();
}

void build_devices(State& s, const std::vector<Card>& cards, Hierarchy hierarchy,
                   const Selection& selected) {
  for (std::size_t c = 0; c < cards.size(); ++c) {
    const Card& card = cards[c];
    std::vector<std::size_t> kept;
    for (std::size_t leaf = 0; leaf < selected[c].size(); ++leaf) {
      if (selected[c][leaf]) kept.push_back(leaf);
    }
    if (kept.empty()) continue;
    if (hierarchy != Hierarchy::composite) {
      for (std::size_t leaf : kept) {
        s.devices.push_back(keep(
            s, card.tiles.empty() ? card_device(card)
                                  : tile_device(card, leaf, hierarchy == Hierarchy::combined)));
      }
      continue;
    }
    _ze_device_handle_t root = card_device(card);
    if (!card.tiles.empty() && kept.size() < card.tiles.size()) {
      root.memory = 0;
      root.eus = 0;
      for (std::size_t t : kept) {
        root.memory += card.tiles[t].memory;
        root.eus += card.tiles[t].eus;
      }
      root.slices = static_cast<std::uint32_t>(kept.size());
    }
    _ze_device_handle_t* root_handle = keep(s, std::move(root));
    if (!card.tiles.empty()) {
      for (std::size_t t : kept) {
        root_handle->sub_devices.push_back(keep(s, tile_device(card, t, true)));
      }
    }
    s.devices.push_back(root_handle);
  }
}

ze_result_t initialize(State& s) {
  if (const char* code = std::getenv("FAKE_ZE_FAIL_INIT")) {
    return static_cast<ze_result_t>(std::strtoul(code, nullptr, 0));
  }
  try {
    std::optional<Machine> machine = load_machine();
    if (!machine) return ZE_RESULT_ERROR_UNINITIALIZED;
    sort_cards(machine->cards);
    Hierarchy hierarchy = hierarchy_named(environment("ZE_FLAT_DEVICE_HIERARCHY"))
                              .value_or(machine->default_hierarchy);
    build_devices(s, machine->cards, hierarchy, apply_mask(machine->cards, hierarchy));
    s.pci_ext = machine->pci_ext;
    s.driver = std::make_unique<_ze_driver_handle_t>();
    s.driver->driver_version = machine->driver_version;
  } catch (const MaskFailure&) {
    return ZE_RESULT_ERROR_UNKNOWN;  // tests ask for this one: no line
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake libze_loader: %s\n", error.what());  // a broken fixture
    return ZE_RESULT_ERROR_UNKNOWN;
  }
  if (s.devices.empty()) return ZE_RESULT_ERROR_UNINITIALIZED;
  return ZE_RESULT_SUCCESS;
}

// ---- checks every entry point makes ---------------------------------------------

bool initialized(const State& s) { return s.init_result == ZE_RESULT_SUCCESS; }

ze_result_t check_driver(const State& s, ze_driver_handle_t driver) {
  if (!initialized(s)) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (driver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return driver == s.driver.get() ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t check_device(const State& s, ze_device_handle_t device) {
  if (!initialized(s)) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (device == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  bool known = std::any_of(s.all_devices.begin(), s.all_devices.end(),
                           [device](const auto& owned) { return owned.get() == device; });
  return known ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

// The count-then-fill pattern: *count 0 asks for the number, a larger one is
// lowered to it, and out (when not null) gets the first *count items.
template <typename Item, typename Fill>
ze_result_t count_and_fill(std::uint32_t* count, Item* out, std::size_t available, Fill fill) {
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto have = static_cast<std::uint32_t>(available);
  if (*count == 0 || *count > have) {
    bool asked_for_count = *count == 0;
    *count = have;
    if (asked_for_count) return ZE_RESULT_SUCCESS;
  }
  if (out != nullptr) {
    for (std::uint32_t i = 0; i < *count; ++i) {
      if (ze_result_t rc = fill(out[i], i); rc != ZE_RESULT_SUCCESS) return rc;
    }
  }
  return ZE_RESULT_SUCCESS;
}

void copy_name(char (&to)[ZE_MAX_DEVICE_NAME], const std::string& from) {
  std::size_t n = std::min(from.size(), sizeof to - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

// numSlices x numSubslicesPerSlice x numEUsPerSubslice == eus, split the way
// an Xe-HPC part reports it (a slice per tile, 8 EUs per Xe core) where the
// numbers allow, so a caller that reads one factor gets a wrong count.
void split_eus(ze_device_properties_t& out, std::uint32_t eus, std::uint32_t slices) {
  if (slices == 0 || eus % slices != 0) slices = 1;
  std::uint32_t per_slice = eus / slices;
  std::uint32_t per_subslice = per_slice % 8 == 0 && per_slice > 0 ? 8 : 1;
  out.numSlices = slices;
  out.numEUsPerSubslice = per_subslice;
  out.numSubslicesPerSlice = per_slice / per_subslice;
}

}  // namespace

// ---- exported entry points -----------------------------------------------------

FAKE_ZE_EXPORT ze_result_t zeInit(ze_init_flags_t flags) {
  if ((flags & ~static_cast<ze_init_flags_t>(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) != 0) {
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  }
  if (flags == ZE_INIT_FLAG_VPU_ONLY) return ZE_RESULT_ERROR_UNINITIALIZED;  // a GPU driver only
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.init_result) s.init_result = initialize(s);
  return *s.init_result;
}

FAKE_ZE_EXPORT ze_result_t zeDriverGet(std::uint32_t* count, ze_driver_handle_t* drivers) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!initialized(s)) return ZE_RESULT_ERROR_UNINITIALIZED;
  return count_and_fill(count, drivers, 1, [&](ze_driver_handle_t& out, std::uint32_t) {
    out = s.driver.get();
    return ZE_RESULT_SUCCESS;
  });
}

FAKE_ZE_EXPORT ze_result_t zeDriverGetProperties(ze_driver_handle_t driver,
                                                 ze_driver_properties_t* properties) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_driver(s, driver); rc != ZE_RESULT_SUCCESS) return rc;
  if (properties == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (properties->stype != ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES || properties->pNext != nullptr) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  std::memset(properties->uuid.id, 0, sizeof properties->uuid.id);
  properties->uuid.id[0] = 0x86;
  properties->uuid.id[1] = 0x80;
  properties->driverVersion = driver->driver_version;
  return ZE_RESULT_SUCCESS;
}

FAKE_ZE_EXPORT ze_result_t zeDeviceGet(ze_driver_handle_t driver, std::uint32_t* count,
                                       ze_device_handle_t* devices) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_driver(s, driver); rc != ZE_RESULT_SUCCESS) return rc;
  return count_and_fill(count, devices, s.devices.size(),
                        [&](ze_device_handle_t& out, std::uint32_t i) {
                          out = s.devices[i];
                          return ZE_RESULT_SUCCESS;
                        });
}

FAKE_ZE_EXPORT ze_result_t zeDeviceGetSubDevices(ze_device_handle_t device, std::uint32_t* count,
                                                 ze_device_handle_t* sub_devices) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_device(s, device); rc != ZE_RESULT_SUCCESS) return rc;
  return count_and_fill(count, sub_devices, device->sub_devices.size(),
                        [&](ze_device_handle_t& out, std::uint32_t i) {
                          out = device->sub_devices[i];
                          return ZE_RESULT_SUCCESS;
                        });
}

FAKE_ZE_EXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t device,
                                                 ze_device_properties_t* properties) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_device(s, device); rc != ZE_RESULT_SUCCESS) return rc;
  if (properties == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_structure_type_t stype = properties->stype;
  if ((stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES &&
       stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2) ||
      properties->pNext != nullptr) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  ze_device_properties_t out{};
  out.stype = stype;
  out.type = ZE_DEVICE_TYPE_GPU;
  out.vendorId = 0x8086;
  out.deviceId = device->device_id;
  if (device->integrated) out.flags |= ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
  if (device->subdevice_id) {
    out.flags |= ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE;
    out.subdeviceId = *device->subdevice_id;
  }
  out.coreClockRate = 1600;
  out.maxMemAllocSize = device->memory;
  out.maxHardwareContexts = 65536;
  out.maxCommandQueuePriority = 0;
  out.numThreadsPerEU = 8;
  out.physicalEUSimdWidth = 16;
  split_eus(out, device->eus, device->slices);
  out.timerResolution = stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES ? 52 : 19'200'000;
  out.timestampValidBits = 64;
  out.kernelTimestampValidBits = 32;
  std::copy(device->uuid.begin(), device->uuid.end(), out.uuid.id);
  copy_name(out.name, device->name);
  *properties = out;
  return ZE_RESULT_SUCCESS;
}

// One bank per device, all of its memory (HBM on a data-centre part).
FAKE_ZE_EXPORT ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t device,
                                                       std::uint32_t* count,
                                                       ze_device_memory_properties_t* banks) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_device(s, device); rc != ZE_RESULT_SUCCESS) return rc;
  return count_and_fill(
      count, banks, 1, [&](ze_device_memory_properties_t& out, std::uint32_t) -> ze_result_t {
        if (out.stype != ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES || out.pNext != nullptr) {
          return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        }
        out.flags = 0;
        out.maxClockRate = 3200;
        out.maxBusWidth = 8192;
        out.totalSize = device->memory;
        copy_name(out.name, device->integrated ? "DDR" : "HBM");
        return ZE_RESULT_SUCCESS;
      });
}

FAKE_ZE_EXPORT ze_result_t zeDevicePciGetPropertiesExt(ze_device_handle_t device,
                                                       ze_pci_ext_properties_t* properties) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (ze_result_t rc = check_device(s, device); rc != ZE_RESULT_SUCCESS) return rc;
  if (properties == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (properties->stype != ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES || properties->pNext != nullptr) {
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  if (!s.pci_ext) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  properties->address = {device->pci.domain, device->pci.bus, device->pci.device,
                         device->pci.function};
  properties->maxSpeed = {-1, -1, -1};
  return ZE_RESULT_SUCCESS;
}
