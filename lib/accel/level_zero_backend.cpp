#include "accel/level_zero_backend.hpp"

#include "util/dynamic_library.hpp"

#include <level_zero/ze_api.h>

#include <cstdio>
#include <vector>

namespace gangrun::accel {
namespace {

// The entry points, typed from the header's own declarations.
struct LevelZero {
  decltype(zeInit)* init = nullptr;
  decltype(zeDriverGet)* driver_get = nullptr;
  decltype(zeDeviceGet)* device_get = nullptr;
  decltype(zeDeviceGetProperties)* device_properties = nullptr;
  decltype(zeDeviceGetSubDevices)* sub_devices = nullptr;
  decltype(zeDeviceGetMemoryProperties)* memory_properties = nullptr;
  decltype(zeDevicePciGetPropertiesExt)* pci_properties = nullptr;  // an extension: may be absent
  decltype(zeDriverGetProperties)* driver_properties = nullptr;     // for the version only
};

Expected<LevelZero> bind(const DynamicLibrary& library) {
  LevelZero api;
  auto need = [&](auto& slot, const char* name) -> Expected<void> {
    GANGRUN_TRY_ASSIGN(
        found,
        library.symbol<std::remove_pointer_t<std::remove_reference_t<decltype(slot)>>>(name));
    slot = *found;
    return {};
  };
  for (const auto& bound :
       {need(api.init, "zeInit"), need(api.driver_get, "zeDriverGet"),
        need(api.device_get, "zeDeviceGet"), need(api.device_properties, "zeDeviceGetProperties"),
        need(api.sub_devices, "zeDeviceGetSubDevices"),
        need(api.memory_properties, "zeDeviceGetMemoryProperties")}) {
    GANGRUN_TRY(bound);
  }
  api.pci_properties = library.optional_symbol<std::remove_pointer_t<decltype(api.pci_properties)>>(
      "zeDevicePciGetPropertiesExt");
  api.driver_properties =
      library.optional_symbol<std::remove_pointer_t<decltype(api.driver_properties)>>(
          "zeDriverGetProperties");
  return api;
}

std::string result_text(ze_result_t result) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%08x", static_cast<unsigned>(result));
  switch (result) {
    case ZE_RESULT_ERROR_UNINITIALIZED:
      return std::string("ZE_RESULT_ERROR_UNINITIALIZED (") + code + "): no Level Zero driver";
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
      return std::string("ZE_RESULT_ERROR_UNSUPPORTED_VERSION (") + code + ")";
    case ZE_RESULT_ERROR_DEVICE_LOST:
      return std::string("ZE_RESULT_ERROR_DEVICE_LOST (") + code + ")";
    default:
      return std::string("error ") + code;
  }
}

std::string uuid_text(const ze_device_uuid_t& uuid) {
  std::string text;
  char digits[3];
  for (std::uint8_t byte : uuid.id) {
    std::snprintf(digits, sizeof digits, "%02x", byte);
    text += digits;
  }
  return text;
}

Device describe(const LevelZero& api, ze_device_handle_t handle, int index) {
  Device device;
  device.kind = DeviceKind::xpu;
  device.index = index;
  ze_device_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  if (api.device_properties(handle, &properties) == ZE_RESULT_SUCCESS) {
    device.name = properties.name;
    device.uuid = uuid_text(properties.uuid);
    device.compute_units = static_cast<int>(properties.numSlices * properties.numSubslicesPerSlice *
                                            properties.numEUsPerSubslice);
  }
  std::uint32_t tiles = 0;
  if (api.sub_devices(handle, &tiles, nullptr) == ZE_RESULT_SUCCESS) {
    device.tiles = static_cast<int>(tiles);
  }
  std::uint32_t banks = 0;
  if (api.memory_properties(handle, &banks, nullptr) == ZE_RESULT_SUCCESS && banks > 0) {
    std::vector<ze_device_memory_properties_t> memory(banks);
    for (auto& bank : memory) bank.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    if (api.memory_properties(handle, &banks, memory.data()) == ZE_RESULT_SUCCESS) {
      for (std::uint32_t i = 0; i < banks; ++i) device.memory_bytes += memory[i].totalSize;
    }
  }
  if (api.pci_properties != nullptr) {
    ze_pci_ext_properties_t pci{};
    pci.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES;
    if (api.pci_properties(handle, &pci) == ZE_RESULT_SUCCESS) {
      device.pci =
          PciAddress{pci.address.domain, pci.address.bus, pci.address.device, pci.address.function};
    }
  }
  return device;
}

// Intel's driver packs its version as major (8 bits), minor (8), build (16):
// "1.3.29735".
std::string driver_version_text(const LevelZero& api, ze_driver_handle_t driver) {
  if (api.driver_properties == nullptr) return "";
  ze_driver_properties_t properties{};
  properties.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
  if (api.driver_properties(driver, &properties) != ZE_RESULT_SUCCESS) return "";
  std::uint32_t v = properties.driverVersion;
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xffU) + "." +
         std::to_string(v & 0xffffU);
}

}  // namespace

std::string level_zero_library_path(const EnvMap& env) {
  return env_lookup(env, "GANGRUN_LEVEL_ZERO_LIBRARY").value_or(k_default_level_zero_library);
}

BackendReport probe_level_zero(const EnvMap& env) {
  BackendReport report;
  report.kind = DeviceKind::xpu;
  auto library = DynamicLibrary::open(level_zero_library_path(env));
  if (!library) {
    report.unavailable = library.error().describe();
    return report;
  }
  auto api = bind(*library);
  if (!api) {
    report.unavailable = api.error().describe();
    return report;
  }
  // A driver, once initialised, may keep threads running in the library.
  library->keep_loaded();
  if (ze_result_t result = api->init(ZE_INIT_FLAG_GPU_ONLY); result != ZE_RESULT_SUCCESS) {
    report.unavailable = "zeInit failed: " + result_text(result);
    return report;
  }
  std::uint32_t driver_count = 0;
  if (ze_result_t result = api->driver_get(&driver_count, nullptr);
      result != ZE_RESULT_SUCCESS || driver_count == 0) {
    report.unavailable = result != ZE_RESULT_SUCCESS ? "zeDriverGet failed: " + result_text(result)
                                                     : "the Level Zero loader found no driver";
    return report;
  }
  std::vector<ze_driver_handle_t> drivers(driver_count);
  if (ze_result_t result = api->driver_get(&driver_count, drivers.data());
      result != ZE_RESULT_SUCCESS) {
    report.unavailable = "zeDriverGet failed: " + result_text(result);
    return report;
  }
  report.driver_version = driver_version_text(*api, drivers.front());
  for (std::uint32_t d = 0; d < driver_count; ++d) {
    std::uint32_t device_count = 0;
    if (api->device_get(drivers[d], &device_count, nullptr) != ZE_RESULT_SUCCESS) continue;
    std::vector<ze_device_handle_t> devices(device_count);
    if (api->device_get(drivers[d], &device_count, devices.data()) != ZE_RESULT_SUCCESS) continue;
    for (std::uint32_t i = 0; i < device_count; ++i) {
      report.devices.push_back(describe(*api, devices[i], static_cast<int>(report.devices.size())));
    }
  }
  if (report.devices.empty()) report.unavailable = "the Level Zero driver reports no GPU";
  return report;
}

}  // namespace gangrun::accel
