// A stand-in for NVIDIA's libnvidia-ml.so.1, built as a real shared library
// so the tests exercise gangrun's dlopen path (accel/nvml_usage.hpp). It
// exports the NVML entry points gangrun uses, with the layouts declared in
// accel/nvml_api.hpp, and describes a scripted machine. It links no gangrun
// code: it plays the driver.
//
// Environment:
//   FAKE_NVML_MACHINE   JSON file, read again at every nvmlDeviceGetCount_v2
//                       (so a test can change what the GPUs do while a job runs;
//                       write it whole and rename it into place):
//     {"gpus": [{"uuid": "GPU-...", "utilization": 87,     // percent; absent: unsupported
//                "memory_total": 85899345920, "memory_used": 1073741824,
//                "processes": [{"pid": 1234, "memory": 1048576}]}]}
//                                              // "memory": null: not available
//     Unset or unreadable: nvmlInit_v2 fails as with no driver loaded.
//
// Built twice (tests/CMakeLists.txt): the second time with
// FAKE_NVML_WITHOUT_V3, a driver before 11.x, which exports only the
// unversioned, two-field process list.
#include "accel/nvml_api.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace nv = gangrun::accel::nvml_api;

namespace {

struct FakeGpu {
  std::string uuid;
  int utilization = -1;  // -1: not supported
  unsigned long long memory_total = 0;
  unsigned long long memory_used = 0;
  std::vector<nv::nvmlProcessInfo_v2_t> processes;
};

std::mutex g_mutex;
bool g_initialised = false;
std::vector<FakeGpu> g_gpus;

bool load_machine() {
  const char* path = std::getenv("FAKE_NVML_MACHINE");
  if (!path) return false;
  std::ifstream in(path);
  nlohmann::json machine = nlohmann::json::parse(in, nullptr, false);
  if (machine.is_discarded() || !machine.is_object()) return false;
  std::vector<FakeGpu> gpus;
  for (const nlohmann::json& gpu : machine.value("gpus", nlohmann::json::array())) {
    FakeGpu fake;
    fake.uuid = gpu.value("uuid", "");
    fake.utilization = gpu.contains("utilization") ? gpu["utilization"].get<int>() : -1;
    fake.memory_total = gpu.value("memory_total", 0ULL);
    fake.memory_used = gpu.value("memory_used", 0ULL);
    for (const nlohmann::json& process : gpu.value("processes", nlohmann::json::array())) {
      nv::nvmlProcessInfo_v2_t info{};
      info.pid = process.value("pid", 0U);
      const nlohmann::json& memory =
          process.contains("memory") ? process["memory"] : nlohmann::json();
      info.usedGpuMemory =
          memory.is_number() ? memory.get<unsigned long long>() : nv::k_value_not_available;
      fake.processes.push_back(info);
    }
    gpus.push_back(std::move(fake));
  }
  g_gpus = std::move(gpus);
  return true;
}

// A GPU's handle is the address of its byte here, so that a caller passing
// an index where a handle belongs gets NVML_ERROR_INVALID_ARGUMENT.
constexpr unsigned k_max_gpus = 64;
char g_handles[k_max_gpus];

nv::nvmlDevice_t handle_of(unsigned index) {
  return reinterpret_cast<nv::nvmlDevice_t>(&g_handles[index]);
}

const FakeGpu* gpu_of(nv::nvmlDevice_t device) {
  const char* byte = reinterpret_cast<const char*>(device);
  if (byte < &g_handles[0] || byte >= &g_handles[k_max_gpus]) return nullptr;
  auto index = static_cast<std::size_t>(byte - &g_handles[0]);
  return index < g_gpus.size() ? &g_gpus[index] : nullptr;
}

template <typename Info>
nv::nvmlReturn_t list_processes(nv::nvmlDevice_t device, unsigned* count, Info* infos) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_initialised) return nv::NVML_ERROR_UNINITIALIZED;
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu || !count) return nv::NVML_ERROR_INVALID_ARGUMENT;
  auto needed = static_cast<unsigned>(gpu->processes.size());
  if (*count < needed) {
    *count = needed;
    return nv::NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < needed; ++i) {
    infos[i].pid = gpu->processes[i].pid;
    infos[i].usedGpuMemory = gpu->processes[i].usedGpuMemory;
  }
  *count = needed;
  return nv::NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!load_machine()) return nv::NVML_ERROR_DRIVER_NOT_LOADED;
  g_initialised = true;
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_initialised = false;
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nv::nvmlReturn_t rc) {
  switch (rc) {
    case nv::NVML_SUCCESS:
      return "Success";
    case nv::NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case nv::NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case nv::NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case nv::NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_initialised) return nv::NVML_ERROR_UNINITIALIZED;
  load_machine();  // keeps the last good machine when the file is being replaced
  *count = static_cast<unsigned>(g_gpus.size());
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index,
                                                                nv::nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_initialised) return nv::NVML_ERROR_UNINITIALIZED;
  if (index >= g_gpus.size() || index >= k_max_gpus || !device)
    return nv::NVML_ERROR_INVALID_ARGUMENT;
  *device = handle_of(index);
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetUUID(nv::nvmlDevice_t device, char* uuid,
                                                    unsigned length) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu || !uuid) return nv::NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->uuid.size() + 1 > length) return nv::NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(uuid, gpu->uuid.c_str(), gpu->uuid.size() + 1);
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetUtilizationRates(nv::nvmlDevice_t device,
                                                                nv::nvmlUtilization_t* rates) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu || !rates) return nv::NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->utilization < 0) return nv::NVML_ERROR_NOT_SUPPORTED;
  rates->gpu = static_cast<unsigned>(gpu->utilization);
  rates->memory = 0;
  return nv::NVML_SUCCESS;
}

FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetMemoryInfo(nv::nvmlDevice_t device,
                                                          nv::nvmlMemory_t* memory) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const FakeGpu* gpu = gpu_of(device);
  if (!gpu || !memory) return nv::NVML_ERROR_INVALID_ARGUMENT;
  memory->total = gpu->memory_total;
  memory->used = gpu->memory_used;
  memory->free = gpu->memory_total - std::min(gpu->memory_used, gpu->memory_total);
  return nv::NVML_SUCCESS;
}

// The two-field list every driver has, and the four-field one of 11.x on.
FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(
    nv::nvmlDevice_t device, unsigned* count, nv::nvmlProcessInfo_v1_t* infos) {
  return list_processes(device, count, infos);
}

#ifndef FAKE_NVML_WITHOUT_V3
FAKE_NVML_EXPORT nv::nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nv::nvmlDevice_t device, unsigned* count, nv::nvmlProcessInfo_v2_t* infos) {
  return list_processes(device, count, infos);
}
#endif
