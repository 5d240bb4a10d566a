#include "accel/cuda_backend.hpp"

#include "util/dynamic_library.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace gangrun::accel {

namespace {

namespace cu = cuda_api;

// The resolved entry points; `library` keeps them valid.
struct CudaDriver {
  explicit CudaDriver(DynamicLibrary opened) : library(std::move(opened)) {}

  DynamicLibrary library;
  cu::cuInit_fn* init = nullptr;
  cu::cuDriverGetVersion_fn* driver_get_version = nullptr;
  cu::cuDeviceGetCount_fn* device_get_count = nullptr;
  cu::cuDeviceGet_fn* device_get = nullptr;
  cu::cuDeviceGetName_fn* device_get_name = nullptr;
  cu::cuDeviceGetUuid_v2_fn* device_get_uuid_v2 = nullptr;  // null before R470
  cu::cuDeviceGetUuid_v1_fn* device_get_uuid_v1 = nullptr;  // null if a driver drops it
  cu::cuDeviceTotalMem_v2_fn* device_total_mem = nullptr;
  cu::cuDeviceGetAttribute_fn* device_get_attribute = nullptr;
  cu::cuGetErrorString_fn* get_error_string = nullptr;

  // "<driver's text> (<code>)".
  std::string describe(cu::CUresult code) const {
    const char* text = nullptr;
    if (get_error_string(code, &text) != cu::CUDA_SUCCESS || text == nullptr) {
      text = "unknown CUresult";
    }
    return std::string(text) + " (" + std::to_string(code) + ")";
  }
};

// Looks symbols up one after another and keeps the first failure.
struct Resolver {
  const DynamicLibrary& library;
  std::optional<Error> error;

  template <typename T>
  void operator()(const char* name, T*& out) {
    if (error) return;
    Expected<T*> address = library.symbol<T>(name);
    if (address) {
      out = *address;
    } else {
      error = std::move(address.error());
    }
  }
};

Expected<CudaDriver> load_driver(DynamicLibrary library) {
  CudaDriver driver(std::move(library));
  const DynamicLibrary& lib = driver.library;
  Resolver resolve{lib, std::nullopt};
  resolve(cu::k_cuInit, driver.init);
  resolve(cu::k_cuDriverGetVersion, driver.driver_get_version);
  resolve(cu::k_cuDeviceGetCount, driver.device_get_count);
  resolve(cu::k_cuDeviceGet, driver.device_get);
  resolve(cu::k_cuDeviceGetName, driver.device_get_name);
  resolve(cu::k_cuDeviceTotalMem_v2, driver.device_total_mem);
  resolve(cu::k_cuDeviceGetAttribute, driver.device_get_attribute);
  resolve(cu::k_cuGetErrorString, driver.get_error_string);
  if (resolve.error) return tl::unexpected(std::move(*resolve.error));

  driver.device_get_uuid_v2 =
      lib.optional_symbol<cu::cuDeviceGetUuid_v2_fn>(cu::k_cuDeviceGetUuid_v2);
  driver.device_get_uuid_v1 =
      lib.optional_symbol<cu::cuDeviceGetUuid_v1_fn>(cu::k_cuDeviceGetUuid_v1);
  if (driver.device_get_uuid_v2 == nullptr && driver.device_get_uuid_v1 == nullptr) {
    return fail(ErrorCode::not_found,
                "neither cuDeviceGetUuid_v2 nor cuDeviceGetUuid found in " + lib.path());
  }
  return driver;
}

BackendReport unavailable_report(std::string why, std::string driver_version = {}) {
  BackendReport report;
  report.kind = DeviceKind::cuda;
  report.unavailable = std::move(why);
  report.driver_version = std::move(driver_version);
  return report;
}

std::optional<int> attribute(const CudaDriver& driver, cu::CUdevice device,
                             cu::CUdevice_attribute which) {
  int value = 0;
  if (driver.device_get_attribute(&value, which, device) != cu::CUDA_SUCCESS) return std::nullopt;
  return value;
}

std::optional<PciAddress> pci_address(const CudaDriver& driver, cu::CUdevice device) {
  std::optional<int> domain = attribute(driver, device, cu::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  std::optional<int> bus = attribute(driver, device, cu::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  std::optional<int> slot = attribute(driver, device, cu::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  if (!domain || !bus || !slot || *domain < 0 || *bus < 0 || *slot < 0) return std::nullopt;
  // The attributes carry no function number; NVIDIA GPUs are function 0.
  return PciAddress{static_cast<std::uint32_t>(*domain), static_cast<std::uint32_t>(*bus),
                    static_cast<std::uint32_t>(*slot), 0};
}

Error device_call_failed(const CudaDriver& driver, const char* call, int ordinal,
                         cu::CUresult code) {
  return Error(ErrorCode::io, std::string(call) + " failed for CUDA device " +
                                  std::to_string(ordinal) + ": " + driver.describe(code));
}

Expected<Device> read_device(const CudaDriver& driver, int ordinal) {
  Device device;
  device.kind = DeviceKind::cuda;
  device.index = ordinal;

  cu::CUdevice handle = 0;
  if (cu::CUresult rc = driver.device_get(&handle, ordinal); rc != cu::CUDA_SUCCESS) {
    return tl::unexpected(device_call_failed(driver, "cuDeviceGet", ordinal, rc));
  }

  constexpr int k_name_capacity = 256;
  char name[k_name_capacity + 1] = {};  // the last byte stays NUL whatever the driver writes
  if (cu::CUresult rc = driver.device_get_name(name, k_name_capacity, handle);
      rc != cu::CUDA_SUCCESS) {
    return tl::unexpected(device_call_failed(driver, "cuDeviceGetName", ordinal, rc));
  }
  device.name = name;

  // Only _v2 returns a MIG compute instance's own UUID; v1 returns the
  // parent GPU's (that is why _v2 exists, cuda.h 11.4+). The driver API has
  // no "is MIG" query, so a device whose two UUIDs differ is taken to be a
  // MIG instance; so is one named "<board> MIG <profile>" ("NVIDIA
  // A100-SXM4-40GB MIG 1g.5gb"), in case v1 also returns the MIG UUID.
  // Without _v2 there is no MIG UUID to print, so nothing is called MIG.
  // Neither rule has been checked on MIG hardware yet.
  cu::CUuuid uuid = {};
  auto* get_uuid =
      driver.device_get_uuid_v2 != nullptr ? driver.device_get_uuid_v2 : driver.device_get_uuid_v1;
  if (cu::CUresult rc = get_uuid(&uuid, handle); rc != cu::CUDA_SUCCESS) {
    return tl::unexpected(device_call_failed(driver, "cuDeviceGetUuid", ordinal, rc));
  }
  if (driver.device_get_uuid_v2 != nullptr && driver.device_get_uuid_v1 != nullptr) {
    cu::CUuuid parent = {};
    if (driver.device_get_uuid_v1(&parent, handle) == cu::CUDA_SUCCESS &&
        std::memcmp(parent.bytes, uuid.bytes, sizeof uuid.bytes) != 0) {
      device.mig = true;
    }
  }
  if (driver.device_get_uuid_v2 != nullptr && device.name.find(" MIG ") != std::string::npos) {
    device.mig = true;
  }
  device.uuid = cuda_uuid_text(uuid, device.mig);

  std::size_t bytes = 0;
  if (cu::CUresult rc = driver.device_total_mem(&bytes, handle); rc != cu::CUDA_SUCCESS) {
    return tl::unexpected(device_call_failed(driver, "cuDeviceTotalMem_v2", ordinal, rc));
  }
  device.memory_bytes = bytes;

  // The rest is descriptive: a driver that cannot say leaves it empty.
  device.pci = pci_address(driver, handle);
  std::optional<int> major =
      attribute(driver, handle, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  std::optional<int> minor =
      attribute(driver, handle, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  if (major && minor) device.architecture = std::to_string(*major) + "." + std::to_string(*minor);
  device.compute_units =
      attribute(driver, handle, cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).value_or(0);
  return device;
}

}  // namespace

std::string cuda_library_path(const EnvMap& env) {
  std::optional<std::string> path = env_lookup(env, "GANGRUN_CUDA_LIBRARY");
  return path && !path->empty() ? *path : k_default_cuda_library;
}

std::string cuda_uuid_text(const cuda_api::CUuuid& uuid, bool mig) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string text = mig ? "MIG-" : "GPU-";
  for (std::size_t i = 0; i < sizeof uuid.bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    text += k_hex[byte >> 4];
    text += k_hex[byte & 0x0f];
  }
  return text;
}

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

BackendReport probe_cuda(const EnvMap& env) {
  std::string path = cuda_library_path(env);
  Expected<DynamicLibrary> library = DynamicLibrary::open(path);
  if (!library) return unavailable_report(path + " not found (" + library.error().message() + ")");

  Expected<CudaDriver> loaded = load_driver(std::move(*library));
  if (!loaded) return unavailable_report(loaded.error().message());
  CudaDriver& driver = *loaded;

  // Works without cuInit; kept even when cuInit fails, for the -v message.
  BackendReport report;
  report.kind = DeviceKind::cuda;
  if (int version = 0; driver.driver_get_version(&version) == cu::CUDA_SUCCESS && version > 0) {
    report.driver_version = cuda_version_text(version);
  }

  // cuInit may start driver threads, even when it fails; unloading the
  // library under them would crash the process later.
  driver.library.keep_loaded();
  if (cu::CUresult rc = driver.init(0); rc != cu::CUDA_SUCCESS) {
    return unavailable_report("cuInit failed: " + driver.describe(rc), report.driver_version);
  }

  int count = 0;
  if (cu::CUresult rc = driver.device_get_count(&count); rc != cu::CUDA_SUCCESS) {
    return unavailable_report("cuDeviceGetCount failed: " + driver.describe(rc),
                              report.driver_version);
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    // One unreadable device makes the whole list untrustworthy: ordinals
    // and masks are computed over all of it.
    Expected<Device> device = read_device(driver, ordinal);
    if (!device) return unavailable_report(device.error().message(), report.driver_version);
    report.devices.push_back(std::move(*device));
  }
  return report;
}

}  // namespace gangrun::accel
