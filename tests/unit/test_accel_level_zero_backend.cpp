#include "accel/level_zero_backend.hpp"
#include "probe/probe_runner.hpp"

#include <catch2/catch.hpp>

using gangrun::accel::DeviceKind;
using gangrun::accel::level_zero_library_path;
using gangrun::accel::probe_level_zero;

TEST_CASE("level zero: the library path can be overridden", "[accel]") {
  CHECK(level_zero_library_path({}) == "libze_loader.so.1");
  CHECK(level_zero_library_path({{"GANGRUN_LEVEL_ZERO_LIBRARY", "/opt/ze.so"}}) == "/opt/ze.so");
}

TEST_CASE("level zero: a missing loader is no XPU, and says which file", "[accel]") {
  auto report =
      probe_level_zero({{"GANGRUN_LEVEL_ZERO_LIBRARY", "/nonexistent/libze_loader.so.1"}});
  CHECK(report.kind == DeviceKind::xpu);
  CHECK(report.devices.empty());
  REQUIRE(report.unavailable);
  CHECK_THAT(*report.unavailable, Catch::Contains("/nonexistent/libze_loader.so.1"));
}

TEST_CASE("level zero: the installed loader without an Intel driver is no XPU, and says why",
          "[accel]") {
  // Debian's libze1 is installed by scripts/install-deps; a machine with an
  // Intel GPU driver lists devices instead, and then each has a UUID.
  auto report = probe_level_zero({});
  if (report.devices.empty()) {
    REQUIRE(report.unavailable);
    bool explained =
        report.unavailable->find("ZE_RESULT_ERROR_UNINITIALIZED") != std::string::npos ||
        report.unavailable->find("no driver") != std::string::npos ||
        report.unavailable->find("libze_loader.so.1") != std::string::npos;
    CHECK(explained);
  } else {
    for (const auto& device : report.devices) CHECK(device.uuid.size() == 32);
  }
}

TEST_CASE("level zero: probing in a child gives the same answer as in process", "[accel]") {
  using gangrun::probe::probe_level_zero_in_child;
  auto missing =
      probe_level_zero_in_child({{"GANGRUN_LEVEL_ZERO_LIBRARY", "/nonexistent/libze_loader.so.1"}});
  CHECK(missing.kind == DeviceKind::xpu);
  CHECK(missing.devices.empty());
  REQUIRE(missing.unavailable);
  CHECK_THAT(*missing.unavailable, Catch::Contains("/nonexistent/libze_loader.so.1"));

  auto installed = probe_level_zero_in_child({});
  auto here = probe_level_zero({});
  CHECK(installed.devices.size() == here.devices.size());
  CHECK(installed.unavailable == here.unavailable);
}
