// A stand-in for NVIDIA's libcuda.so.1, built as a real shared library so the
// tests exercise gangrun's dlopen path. It exports the driver entry points
// gangrun uses, with the signatures declared in accel/cuda_api.hpp, and
// describes a scripted machine. It links no gangrun code: it plays the
// driver, so its CUDA_VISIBLE_DEVICES handling is written independently of
// lib/accel, from what NVIDIA documents and what drivers were seen to do.
//
// Environment, read at cuInit as the driver reads it:
//   FAKE_CUDA_MACHINE     JSON file:
//     {"driver_version": 12060,
//      "gpus": [{"name": "NVIDIA H100 80GB HBM3",
//                "uuid": "32 hex digits (dashes ignored)",
//                "pci": "0000:1a:00.0", "memory": 85899345920,
//                "cc": "9.0", "sms": 132,
//                "speed_rank": 0,   // FASTEST_FIRST order: lower is faster
//                "mig": [{"uuid": "...", "profile": "1g.10gb",
//                         "memory": 10737418240, "sms": 16}]}]}
//     Unset: a machine with no GPU.
//   CUDA_DEVICE_ORDER     PCI_BUS_ID, or FASTEST_FIRST (the default): by
//                         speed_rank, ties by PCI address.
//   CUDA_VISIBLE_DEVICES  the driver's grammar: indices (strtoul-like, the
//                         first invalid or out-of-range entry ends the list),
//                         or GPU-/MIG- unique UUID prefixes (the first
//                         unknown or ambiguous one, or one with the other
//                         prefix, ends the list); a
//                         duplicate empties the list; "" hides everything.
//   FAKE_CUDA_FAIL_INIT   cuInit returns this code.
//   FAKE_CUDA_HANG_INIT   cuInit never returns (a hung driver).
//
// A GPU with MIG instances is enumerated as its first instance, and a
// process sees at most one MIG device (the limit the CUDA guide documents).
// Handles are 1000 + ordinal, so a caller that passes an ordinal where a
// CUdevice belongs gets CUDA_ERROR_INVALID_DEVICE.
#include "accel/cuda_api.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#define FAKE_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace cu = gangrun::accel::cuda_api;

namespace {

using Uuid = std::array<unsigned char, 16>;

struct FakeDevice {
  std::string name;
  Uuid uuid{};         // what cuDeviceGetUuid_v2 returns
  Uuid parent_uuid{};  // what cuDeviceGetUuid (v1) returns: the board's, for a MIG instance
  bool mig = false;
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
  std::size_t memory = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int sms = 0;
  int speed_rank = 0;
};

struct Gpu {
  FakeDevice board;
  std::vector<FakeDevice> mig_instances;
  // What an index or a GPU- UUID selects.
  const FakeDevice& enumerated() const {
    return mig_instances.empty() ? board : mig_instances.front();
  }
};

struct Machine {
  int driver_version = 12060;
  std::vector<Gpu> gpus;
};

struct State {
  std::mutex mutex;
  bool machine_loaded = false;
  Machine machine;
  bool initialized = false;
  std::vector<FakeDevice> visible;
};

State& state() {
  static State instance;
  return instance;
}

constexpr int k_handle_base = 1000;

// ---- the machine file ----------------------------------------------------------

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Uuid parse_uuid(std::string text) {
  if (text.rfind("GPU-", 0) == 0 || text.rfind("MIG-", 0) == 0) text.erase(0, 4);
  std::string digits;
  for (char c : text) {
    if (c != '-') digits += c;
  }
  if (digits.size() != 32) throw std::runtime_error("uuid \"" + text + "\" is not 16 bytes");
  Uuid uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    int high = hex_digit(digits[2 * i]);
    int low = hex_digit(digits[2 * i + 1]);
    if (high < 0 || low < 0) throw std::runtime_error("uuid \"" + text + "\" is not hex");
    uuid[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return uuid;
}

FakeDevice parse_board(const nlohmann::json& in) {
  FakeDevice device;
  device.name = in.at("name").get<std::string>();
  device.uuid = parse_uuid(in.at("uuid").get<std::string>());
  device.parent_uuid = device.uuid;
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned slot = 0;
  unsigned function = 0;
  std::string pci = in.at("pci").get<std::string>();
  if (std::sscanf(pci.c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    throw std::runtime_error("pci \"" + pci + "\" is not dddd:bb:dd.f");
  }
  device.pci_domain = static_cast<int>(domain);
  device.pci_bus = static_cast<int>(bus);
  device.pci_device = static_cast<int>(slot);
  device.memory = in.at("memory").get<std::size_t>();
  std::string cc = in.at("cc").get<std::string>();
  if (std::sscanf(cc.c_str(), "%d.%d", &device.cc_major, &device.cc_minor) != 2) {
    throw std::runtime_error("cc \"" + cc + "\" is not major.minor");
  }
  device.sms = in.at("sms").get<int>();
  device.speed_rank = in.value("speed_rank", 0);
  return device;
}

Machine parse_machine(const nlohmann::json& in) {
  Machine machine;
  machine.driver_version = in.value("driver_version", machine.driver_version);
  for (const nlohmann::json& entry : in.at("gpus")) {
    Gpu gpu;
    gpu.board = parse_board(entry);
    for (const nlohmann::json& mig : entry.value("mig", nlohmann::json::array())) {
      FakeDevice instance = gpu.board;
      instance.mig = true;
      instance.name = gpu.board.name + " MIG " + mig.at("profile").get<std::string>();
      instance.uuid = parse_uuid(mig.at("uuid").get<std::string>());
      instance.memory = mig.at("memory").get<std::size_t>();
      instance.sms = mig.at("sms").get<int>();
      gpu.mig_instances.push_back(instance);
    }
    machine.gpus.push_back(std::move(gpu));
  }
  return machine;
}

// False (and a line on stderr: a broken test fixture should be loud) when
// FAKE_CUDA_MACHINE names a file that cannot be read.
bool load_machine(State& s) {
  if (s.machine_loaded) return true;
  const char* path = std::getenv("FAKE_CUDA_MACHINE");
  if (path == nullptr) {
    s.machine_loaded = true;  // no GPU
    return true;
  }
  try {
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot open the file");
    s.machine = parse_machine(nlohmann::json::parse(file));
    s.machine_loaded = true;
    return true;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fake libcuda: FAKE_CUDA_MACHINE=%s: %s\n", path, error.what());
    return false;
  }
}

// ---- the driver's view: order, then CUDA_VISIBLE_DEVICES --------------------

auto pci_key(const FakeDevice& d) { return std::make_tuple(d.pci_domain, d.pci_bus, d.pci_device); }

std::vector<const Gpu*> ordered_gpus(const Machine& machine) {
  std::vector<const Gpu*> gpus;
  for (const Gpu& gpu : machine.gpus) gpus.push_back(&gpu);
  const char* order = std::getenv("CUDA_DEVICE_ORDER");
  bool by_pci = order != nullptr && std::strcmp(order, "PCI_BUS_ID") == 0;
  std::stable_sort(gpus.begin(), gpus.end(), [by_pci](const Gpu* a, const Gpu* b) {
    if (by_pci) return pci_key(a->board) < pci_key(b->board);
    return std::make_tuple(a->board.speed_rank, pci_key(a->board)) <
           std::make_tuple(b->board.speed_rank, pci_key(b->board));
  });
  return gpus;
}

std::string uuid_text(const char* prefix, const Uuid& uuid) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string text = prefix;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += k_hex[uuid[i] >> 4];
    text += k_hex[uuid[i] & 0x0f];
  }
  return text;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// strtoul's reading of an entry: leading space, a sign, digits, junk after
// them ignored. nullopt for no digits or a negative number (-0 is 0).
std::optional<long> leading_index(const std::string& entry) {
  std::size_t i = 0;
  while (i < entry.size() && std::isspace(static_cast<unsigned char>(entry[i]))) ++i;
  bool negative = false;
  if (i < entry.size() && (entry[i] == '+' || entry[i] == '-')) negative = entry[i++] == '-';
  std::size_t first_digit = i;
  long value = 0;
  while (i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i]))) {
    value = std::min(value * 10 + (entry[i] - '0'), 1'000'000L);
    ++i;
  }
  if (i == first_digit || (negative && value != 0)) return std::nullopt;
  return value;
}

// The one device a UUID prefix names, or null when none or several do.
const FakeDevice* match_uuid_prefix(const std::vector<const Gpu*>& gpus, const std::string& entry) {
  const FakeDevice* found = nullptr;
  int matches = 0;
  for (const Gpu* gpu : gpus) {
    if (uuid_text("GPU-", gpu->board.uuid).rfind(entry, 0) == 0) {
      found = &gpu->enumerated();
      ++matches;
    }
    for (const FakeDevice& instance : gpu->mig_instances) {
      if (uuid_text("MIG-", instance.uuid).rfind(entry, 0) == 0) {
        found = &instance;
        ++matches;
      }
    }
  }
  return matches == 1 ? found : nullptr;
}

std::vector<const FakeDevice*> select_visible(const std::vector<const Gpu*>& gpus) {
  std::vector<const FakeDevice*> selected;
  const char* variable = std::getenv("CUDA_VISIBLE_DEVICES");
  if (variable == nullptr) {
    for (const Gpu* gpu : gpus) selected.push_back(&gpu->enumerated());
    return selected;
  }
  std::string value = variable;
  if (value.empty()) return selected;
  // A list of UUIDs when it starts with GPU- or MIG-; every entry must then
  // carry that same prefix (mixed lists are unmeasured; PyTorch's reading).
  std::string uuid_prefix = value.substr(0, 4);
  bool uuids = uuid_prefix == "GPU-" || uuid_prefix == "MIG-";
  for (const std::string& entry : split_commas(value)) {
    const FakeDevice* device = nullptr;
    if (uuids) {
      if (entry.rfind(uuid_prefix, 0) != 0) break;
      device = match_uuid_prefix(gpus, entry);
    } else if (std::optional<long> index = leading_index(entry);
               index && *index < static_cast<long>(gpus.size())) {
      device = &gpus[static_cast<std::size_t>(*index)]->enumerated();
    }
    if (device == nullptr) break;
    if (std::find(selected.begin(), selected.end(), device) != selected.end()) return {};
    selected.push_back(device);
  }
  return selected;
}

std::vector<FakeDevice> visible_devices(const Machine& machine) {
  std::vector<FakeDevice> visible;
  bool have_mig = false;
  for (const FakeDevice* device : select_visible(ordered_gpus(machine))) {
    if (device->mig && std::exchange(have_mig, true)) continue;
    visible.push_back(*device);
  }
  return visible;
}

// The device behind a handle, or null.
const FakeDevice* device_for(const State& s, cu::CUdevice handle) {
  int ordinal = handle - k_handle_base;
  if (!s.initialized || ordinal < 0 || ordinal >= static_cast<int>(s.visible.size())) {
    return nullptr;
  }
  return &s.visible[static_cast<std::size_t>(ordinal)];
}

cu::CUresult check_device(const State& s, cu::CUdevice handle, const FakeDevice*& out) {
  if (!s.initialized) return cu::CUDA_ERROR_NOT_INITIALIZED;
  out = device_for(s, handle);
  return out != nullptr ? cu::CUDA_SUCCESS : cu::CUDA_ERROR_INVALID_DEVICE;
}

cu::CUresult copy_uuid(cu::CUuuid* out, const Uuid& uuid) {
  for (std::size_t i = 0; i < uuid.size(); ++i) out->bytes[i] = static_cast<char>(uuid[i]);
  return cu::CUDA_SUCCESS;
}

// Runs answer on the device behind handle, under the lock, once init and
// the handle are checked (what every per-device entry point does first).
template <typename Answer>
cu::CUresult with_device(cu::CUdevice handle, Answer answer) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const FakeDevice* device = nullptr;
  if (cu::CUresult rc = check_device(s, handle, device); rc != cu::CUDA_SUCCESS) return rc;
  return answer(*device);
}

}  // namespace

// ---- exported entry points -----------------------------------------------------

FAKE_CUDA_EXPORT cu::CUresult cuInit(unsigned int flags) {
  if (std::getenv("FAKE_CUDA_HANG_INIT") != nullptr) {
    for (;;) ::pause();
  }
  if (const char* code = std::getenv("FAKE_CUDA_FAIL_INIT")) {
    return static_cast<cu::CUresult>(std::strtol(code, nullptr, 10));
  }
  if (flags != 0) return cu::CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.initialized) return cu::CUDA_SUCCESS;
  try {
    if (!load_machine(s)) return cu::CUDA_ERROR_UNKNOWN;
    s.visible = visible_devices(s.machine);
  } catch (const std::exception&) {
    return cu::CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (s.visible.empty()) return cu::CUDA_ERROR_NO_DEVICE;
  s.initialized = true;
  return cu::CUDA_SUCCESS;
}

FAKE_CUDA_EXPORT cu::CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mutex);
  *version = load_machine(s) ? s.machine.driver_version : Machine{}.driver_version;
  return cu::CUDA_SUCCESS;
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGetCount(int* count) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) return cu::CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(s.visible.size());
  return cu::CUDA_SUCCESS;
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGet(cu::CUdevice* device, int ordinal) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) return cu::CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= static_cast<int>(s.visible.size())) {
    return cu::CUDA_ERROR_INVALID_DEVICE;
  }
  *device = k_handle_base + ordinal;
  return cu::CUDA_SUCCESS;
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGetName(char* name, int length, cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (name == nullptr || length <= 0) return cu::CUDA_ERROR_INVALID_VALUE;
    std::size_t n = std::min(device.name.size(), static_cast<std::size_t>(length) - 1);
    std::memcpy(name, device.name.data(), n);
    name[n] = '\0';
    return cu::CUDA_SUCCESS;
  });
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGetUuid_v2(cu::CUuuid* uuid, cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (uuid == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    return copy_uuid(uuid, device.uuid);
  });
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGetUuid(cu::CUuuid* uuid, cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (uuid == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    return copy_uuid(uuid, device.parent_uuid);
  });
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceTotalMem_v2(std::size_t* bytes, cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (bytes == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    *bytes = device.memory;
    return cu::CUDA_SUCCESS;
  });
}

// The legacy 32-bit export, truncating as the real one does: a caller that
// binds it by mistake sees wrong sizes for any GPU over 4 GiB.
FAKE_CUDA_EXPORT cu::CUresult cuDeviceTotalMem(unsigned int* bytes, cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (bytes == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    *bytes = static_cast<unsigned int>(device.memory);
    return cu::CUDA_SUCCESS;
  });
}

FAKE_CUDA_EXPORT cu::CUresult cuDeviceGetAttribute(int* value, cu::CUdevice_attribute attribute,
                                                   cu::CUdevice handle) {
  return with_device(handle, [&](const FakeDevice& device) {
    if (value == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
      case cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = device.sms;
        return cu::CUDA_SUCCESS;
      case cu::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *value = device.pci_bus;
        return cu::CUDA_SUCCESS;
      case cu::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        *value = device.pci_device;
        return cu::CUDA_SUCCESS;
      case cu::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *value = device.pci_domain;
        return cu::CUDA_SUCCESS;
      case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = device.cc_major;
        return cu::CUDA_SUCCESS;
      case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = device.cc_minor;
        return cu::CUDA_SUCCESS;
      default:
        return cu::CUDA_ERROR_INVALID_VALUE;
    }
  });
}

// Works before cuInit, as the real one does.
FAKE_CUDA_EXPORT cu::CUresult cuGetErrorString(cu::CUresult error, const char** text) {
  static constexpr std::pair<cu::CUresult, const char*> k_texts[] = {
      {cu::CUDA_SUCCESS, "no error"},
      {cu::CUDA_ERROR_INVALID_VALUE, "invalid argument"},
      {cu::CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
      {cu::CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
      {cu::CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
      {cu::CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
      {cu::CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"},
      {cu::CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
      {cu::CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
      {cu::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
       "system has unsupported display driver / cuda driver combination"},
      {cu::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
       "forward compatibility was attempted on non supported HW"},
      {cu::CUDA_ERROR_UNKNOWN, "unknown error"},
  };
  if (text == nullptr) return cu::CUDA_ERROR_INVALID_VALUE;
  for (const auto& [code, message] : k_texts) {
    if (code == error) {
      *text = message;
      return cu::CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return cu::CUDA_ERROR_INVALID_VALUE;
}
