// Our own declarations of the few NVML entry points gangrun calls through
// dlopen("libnvidia-ml.so.1") to read how busy each GPU is. Like the CUDA
// driver's (cuda_api.hpp), NVIDIA's nvml.h is not installed on the build
// machines, so the types are written out: values, layouts and signatures as
// nvml.h 12.x has them.
//
// nvmlReturn_t is an unscoped enum passed like an int on the Linux ABIs;
// nvmlDevice_t is an opaque pointer. The process list's element is
// nvmlProcessInfo_v2_t (which _v2 and _v3 take: pid, memory, two instance
// ids); the unversioned, older entry point takes the two-field v1 layout.
#pragma once

namespace gangrun::accel::nvml_api {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// A UUID's text ("GPU-" and 36 characters) fits in this (NVML_DEVICE_UUID_V2_BUFFER_SIZE).
inline constexpr unsigned k_uuid_buffer_size = 96;
// usedGpuMemory when the driver cannot say (NVML_VALUE_NOT_AVAILABLE).
inline constexpr unsigned long long k_value_not_available = ~0ULL;

struct nvmlUtilization_t {
  unsigned int gpu;     // percent of the last sample period a kernel ran
  unsigned int memory;  // percent of it the memory was read or written
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Function types, named after the exported symbol they are looked up as.
using nvmlInit_v2_fn = nvmlReturn_t();
using nvmlShutdown_fn = nvmlReturn_t();
using nvmlErrorString_fn = const char*(nvmlReturn_t);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t(unsigned int*);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetUUID_fn = nvmlReturn_t(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetUtilizationRates_fn = nvmlReturn_t(nvmlDevice_t, nvmlUtilization_t*);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetComputeRunningProcesses_v2_fn = nvmlReturn_t(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_v2_t*);
using nvmlDeviceGetComputeRunningProcesses_v1_fn = nvmlReturn_t(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_v1_t*);

}  // namespace gangrun::accel::nvml_api
