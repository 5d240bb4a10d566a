// accel/cuda_api.hpp declares the CUDA driver API by hand. Where a CUDA
// toolkit's cuda.h is present at build time (tests/CMakeLists.txt defines
// GANGRUN_HAVE_CUDA_H and adds its directory for this file only), these
// static_asserts check every value, type and exported name we rely on
// against it; a mismatch fails the build, and the test case below says which
// cuda.h passed. Without cuda.h this file holds no test: tests/CMakeLists.txt
// registers a ctest entry of the same name that reports the check as skipped.
#include "accel/cuda_api.hpp"

#include <catch2/catch.hpp>

#ifdef GANGRUN_HAVE_CUDA_H

#include <cuda.h>

#include <string_view>
#include <type_traits>

namespace {

namespace ours = gangrun::accel::cuda_api;

// Two parameter or return types are the same at the ABI level when they are
// the same type, or when one is cuda.h's 32-bit enum and the other our int
// (see the ABI note in cuda_api.hpp), or pointers to layout-identical
// structs (our CUuuid and cuda.h's).
template <typename Ours, typename Theirs>
constexpr bool same_abi() {
  if constexpr (std::is_same_v<Ours, Theirs>) {
    return true;
  } else if constexpr (std::is_enum_v<Theirs>) {
    return (std::is_integral_v<Ours> || std::is_enum_v<Ours>)&&sizeof(Ours) == sizeof(Theirs) &&
           sizeof(Ours) == 4;
  } else if constexpr (std::is_pointer_v<Ours> && std::is_pointer_v<Theirs>) {
    using O = std::remove_pointer_t<Ours>;
    using T = std::remove_pointer_t<Theirs>;
    if constexpr (std::is_class_v<O> && std::is_class_v<T>) {
      // Where both are one type the comparisons are trivially true, which is the point.
      // NOLINTNEXTLINE(misc-redundant-expression)
      return sizeof(O) == sizeof(T) && alignof(O) == alignof(T) && std::is_standard_layout_v<O> &&
             std::is_standard_layout_v<T> && std::is_const_v<O> == std::is_const_v<T>;
    } else {
      return same_abi<O, T>();
    }
  } else {
    return false;
  }
}

template <typename Ours, typename Theirs>
struct same_signature : std::false_type {};

template <typename R1, typename... A1, typename R2, typename... A2>
struct same_signature<R1(A1...), R2(A2...)> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A1) != sizeof...(A2)) {
      return false;
    } else {
      return same_abi<R1, R2>() && (same_abi<A1, A2>() && ...);
    }
  }();
};

template <typename Ours, typename Theirs>
inline constexpr bool same_signature_v = same_signature<Ours, Theirs>::value;

#define GANGRUN_STRINGIFY_EXPANDED(x) #x
#define GANGRUN_STRINGIFY(x) GANGRUN_STRINGIFY_EXPANDED(x)

// ---- values ---------------------------------------------------------------------
#define GANGRUN_SAME_VALUE(name) \
  static_assert(ours::name == static_cast<long long>(::name), #name " differs from cuda.h")

GANGRUN_SAME_VALUE(CUDA_SUCCESS);
GANGRUN_SAME_VALUE(CUDA_ERROR_INVALID_VALUE);
GANGRUN_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
GANGRUN_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
GANGRUN_SAME_VALUE(CUDA_ERROR_DEINITIALIZED);
GANGRUN_SAME_VALUE(CUDA_ERROR_STUB_LIBRARY);
GANGRUN_SAME_VALUE(CUDA_ERROR_DEVICE_UNAVAILABLE);
GANGRUN_SAME_VALUE(CUDA_ERROR_NO_DEVICE);
GANGRUN_SAME_VALUE(CUDA_ERROR_INVALID_DEVICE);
GANGRUN_SAME_VALUE(CUDA_ERROR_DEVICE_NOT_LICENSED);
GANGRUN_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
GANGRUN_SAME_VALUE(CUDA_ERROR_OPERATING_SYSTEM);
GANGRUN_SAME_VALUE(CUDA_ERROR_NOT_PERMITTED);
GANGRUN_SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED);
GANGRUN_SAME_VALUE(CUDA_ERROR_SYSTEM_NOT_READY);
GANGRUN_SAME_VALUE(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
GANGRUN_SAME_VALUE(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
GANGRUN_SAME_VALUE(CUDA_ERROR_MPS_CONNECTION_FAILED);
GANGRUN_SAME_VALUE(CUDA_ERROR_UNKNOWN);

GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
GANGRUN_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);

// ---- types ------------------------------------------------------------------------
static_assert(std::is_same_v<ours::CUdevice, ::CUdevice>);
static_assert(same_abi<ours::CUresult, ::CUresult>());
static_assert(same_abi<ours::CUdevice_attribute, ::CUdevice_attribute>());
static_assert(sizeof(ours::CUuuid) == sizeof(::CUuuid) && sizeof(ours::CUuuid) == 16);
static_assert(alignof(ours::CUuuid) == alignof(::CUuuid));
static_assert(sizeof(ours::CUuuid::bytes) == sizeof(::CUuuid::bytes));

// ---- signatures of the symbols we look up -----------------------------------------
static_assert(same_signature_v<ours::cuInit_fn, decltype(::cuInit)>);
static_assert(same_signature_v<ours::cuDriverGetVersion_fn, decltype(::cuDriverGetVersion)>);
static_assert(same_signature_v<ours::cuDeviceGetCount_fn, decltype(::cuDeviceGetCount)>);
static_assert(same_signature_v<ours::cuDeviceGet_fn, decltype(::cuDeviceGet)>);
static_assert(same_signature_v<ours::cuDeviceGetName_fn, decltype(::cuDeviceGetName)>);
static_assert(same_signature_v<ours::cuDeviceGetUuid_v2_fn, decltype(::cuDeviceGetUuid_v2)>);
// Since CUDA 13 cuda.h declares v1 only for the driver's own build (the public
// name is a macro for _v2); the ABI of the two is the same either way.
static_assert(same_signature_v<ours::cuDeviceGetUuid_v1_fn, decltype(::cuDeviceGetUuid)>);
static_assert(same_signature_v<ours::cuDeviceTotalMem_v2_fn, decltype(::cuDeviceTotalMem_v2)>);
static_assert(same_signature_v<ours::cuDeviceGetAttribute_fn, decltype(::cuDeviceGetAttribute)>);
static_assert(same_signature_v<ours::cuGetErrorString_fn, decltype(::cuGetErrorString)>);

// ---- exported names -------------------------------------------------------------------
// cuda.h maps some public names to versioned symbols with #defines; dlsym
// needs the symbol. These check that the names we look up are what a program
// compiled against this cuda.h would link to.
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceTotalMem)) == ours::k_cuDeviceTotalMem_v2);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuInit)) == ours::k_cuInit);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDriverGetVersion)) ==
              ours::k_cuDriverGetVersion);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceGetCount)) == ours::k_cuDeviceGetCount);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceGet)) == ours::k_cuDeviceGet);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceGetName)) == ours::k_cuDeviceGetName);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceGetAttribute)) ==
              ours::k_cuDeviceGetAttribute);
static_assert(std::string_view(GANGRUN_STRINGIFY(cuGetErrorString)) == ours::k_cuGetErrorString);
// cuDeviceGetUuid is either itself (CUDA <= 12) or a macro for _v2 (13+).
static_assert(std::string_view(GANGRUN_STRINGIFY(cuDeviceGetUuid)) == ours::k_cuDeviceGetUuid_v1 ||
              std::string_view(GANGRUN_STRINGIFY(cuDeviceGetUuid)) == ours::k_cuDeviceGetUuid_v2);

}  // namespace

TEST_CASE("cuda_api.hpp matches the installed cuda.h", "[accel][cuda]") {
  // The static_asserts above are the check; this only says it was made.
  SUCCEED("checked at compile time against cuda.h with CUDA_VERSION " << CUDA_VERSION);
}

#endif
