#include "accel/device.hpp"
#include "config/options.hpp"

#include <catch2/catch.hpp>

using gangrun::accel::DeviceKind;

TEST_CASE("accel::DeviceKind: every kind's word parses back to it", "[accel]") {
  for (DeviceKind kind : {DeviceKind::cuda, DeviceKind::xpu, DeviceKind::rocm, DeviceKind::hpu,
                          DeviceKind::npu, DeviceKind::neuron, DeviceKind::cpu}) {
    INFO(gangrun::accel::to_string(kind));
    CHECK(gangrun::accel::parse_device_kind(gangrun::accel::to_string(kind)) == kind);
  }
  CHECK_FALSE(gangrun::accel::parse_device_kind("gpu"));
  CHECK_FALSE(gangrun::accel::parse_device_kind("CUDA"));
  CHECK(std::string(gangrun::accel::display_name(DeviceKind::xpu)) == "Intel XPU");
}

TEST_CASE("accel::DeviceKind: every --accelerator but auto names a device kind", "[accel]") {
  using gangrun::config::Accelerator;
  for (Accelerator accelerator :
       {Accelerator::cuda, Accelerator::xpu, Accelerator::rocm, Accelerator::cpu, Accelerator::hpu,
        Accelerator::npu, Accelerator::neuron}) {
    INFO(gangrun::config::to_string(accelerator));
    CHECK(gangrun::accel::parse_device_kind(gangrun::config::to_string(accelerator)));
  }
}
