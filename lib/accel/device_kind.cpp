#include "accel/device.hpp"

#include <array>
#include <utility>

namespace gangrun::accel {
namespace {

struct KindNames {
  DeviceKind kind;
  const char* word;
  const char* display;
};

constexpr std::array<KindNames, 7> k_kind_names{{
    {DeviceKind::cuda, "cuda", "CUDA"},
    {DeviceKind::xpu, "xpu", "Intel XPU"},
    {DeviceKind::rocm, "rocm", "AMD ROCm"},
    {DeviceKind::hpu, "hpu", "hpu"},
    {DeviceKind::npu, "npu", "npu"},
    {DeviceKind::neuron, "neuron", "neuron"},
    {DeviceKind::cpu, "cpu", "cpu"},
}};

const KindNames& names_of(DeviceKind kind) {
  for (const KindNames& names : k_kind_names) {
    if (names.kind == kind) return names;
  }
  return k_kind_names.back();
}

}  // namespace

const char* to_string(DeviceKind kind) { return names_of(kind).word; }

const char* display_name(DeviceKind kind) { return names_of(kind).display; }

std::optional<DeviceKind> parse_device_kind(std::string_view word) {
  for (const KindNames& names : k_kind_names) {
    if (word == names.word) return names.kind;
  }
  return std::nullopt;
}

}  // namespace gangrun::accel
