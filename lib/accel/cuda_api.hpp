// Our own declarations of the few CUDA driver API entry points gangrun calls
// through dlopen("libcuda.so.1"). NVIDIA's cuda.h is non-free and not
// installed on the build machines, so the types are written out here:
// values and signatures as in cuda.h 12.6. Where a toolkit is present at
// build time, tests/unit/test_accel_cuda_api_matches_cuda_h.cpp checks them
// against it.
//
// ABI note: cuda.h's CUresult and CUdevice_attribute are unscoped enums whose
// values all fit in 32 bits; on the Linux ABIs (x86-64, aarch64, ppc64le)
// such an enum is passed and returned exactly like an int, so plain int is
// used and the constants are ints. CUDAAPI is empty on Linux.
//
// Names deliberately avoid cuda.h's macro names (cuDeviceGetUuid and
// cuDeviceTotalMem are #defines to their _v2 symbols there), so this header
// and cuda.h can be included in one translation unit.
#pragma once

#include <cstddef>

namespace gangrun::accel::cuda_api {

using CUresult = int;
using CUdevice = int;
using CUdevice_attribute = int;

struct CUuuid {
  char bytes[16];
};

// CUresult values (cuda.h 12.6, enum cudaError_enum).
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_DEVICE_UNAVAILABLE = 46;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_DEVICE_NOT_LICENSED = 102;
inline constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
inline constexpr CUresult CUDA_ERROR_OPERATING_SYSTEM = 304;
inline constexpr CUresult CUDA_ERROR_NOT_PERMITTED = 800;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr CUresult CUDA_ERROR_SYSTEM_NOT_READY = 802;
inline constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;
inline constexpr CUresult CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804;
inline constexpr CUresult CUDA_ERROR_MPS_CONNECTION_FAILED = 805;
inline constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// CUdevice_attribute values gangrun reads (cuda.h 12.6, enum CUdevice_attribute_enum).
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
// The device (slot) number of the BDF, not the PCI product id.
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// Function types, named after the exported symbol they are looked up as.
// cuDeviceTotalMem_v2 is the size_t one; the unsuffixed export is the legacy
// 32-bit ABI and is never used. cuDeviceGetUuid_v2 (R470+) returns a MIG
// instance's own UUID; cuDeviceGetUuid (v1) is the fallback for older drivers.
using cuInit_fn = CUresult(unsigned int flags);
using cuDriverGetVersion_fn = CUresult(int* driver_version);
using cuDeviceGetCount_fn = CUresult(int* count);
using cuDeviceGet_fn = CUresult(CUdevice* device, int ordinal);
using cuDeviceGetName_fn = CUresult(char* name, int length, CUdevice device);
using cuDeviceGetUuid_v2_fn = CUresult(CUuuid* uuid, CUdevice device);
using cuDeviceGetUuid_v1_fn = CUresult(CUuuid* uuid, CUdevice device);
using cuDeviceTotalMem_v2_fn = CUresult(std::size_t* bytes, CUdevice device);
using cuDeviceGetAttribute_fn = CUresult(int* value, CUdevice_attribute attribute, CUdevice device);
// An unknown code gives CUDA_ERROR_INVALID_VALUE and *text = nullptr.
using cuGetErrorString_fn = CUresult(CUresult error, const char** text);

// The exported names, for dlsym.
inline constexpr const char* k_cuInit = "cuInit";
inline constexpr const char* k_cuDriverGetVersion = "cuDriverGetVersion";
inline constexpr const char* k_cuDeviceGetCount = "cuDeviceGetCount";
inline constexpr const char* k_cuDeviceGet = "cuDeviceGet";
inline constexpr const char* k_cuDeviceGetName = "cuDeviceGetName";
inline constexpr const char* k_cuDeviceGetUuid_v2 = "cuDeviceGetUuid_v2";
inline constexpr const char* k_cuDeviceGetUuid_v1 = "cuDeviceGetUuid";
inline constexpr const char* k_cuDeviceTotalMem_v2 = "cuDeviceTotalMem_v2";
inline constexpr const char* k_cuDeviceGetAttribute = "cuDeviceGetAttribute";
inline constexpr const char* k_cuGetErrorString = "cuGetErrorString";

}  // namespace gangrun::accel::cuda_api
