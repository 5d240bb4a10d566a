// probe::probe_in_child's failures, with probes this binary registers for
// its own probe mode (tests/unit/main.cpp runs it when re-executed).
#include "probe/probe_mode.hpp"
#include "probe/probe_runner.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>

using namespace gangrun;
using gangrun::accel::BackendReport;
using gangrun::accel::DeviceKind;
using gangrun::probe::probe_in_child;

namespace {

// SIGKILL rather than abort(), which could leave a core file behind.
BackendReport killed_probe(const EnvMap&) {
  std::raise(SIGKILL);
  return {};
}

BackendReport throwing_probe(const EnvMap&) { throw std::runtime_error("probe bug"); }

// Answers with one device named after the environment's TEST_PROBE_NAME,
// after printing on stdout as a chatty driver might.
BackendReport echo_probe(const EnvMap& env) {
  std::printf("echo probe: a line on stdout that must not reach the report\n");
  BackendReport report;
  report.kind = DeviceKind::xpu;
  accel::Device device;
  device.name = env_lookup(env, "TEST_PROBE_NAME").value_or("unset");
  report.devices.push_back(device);
  return report;
}

const bool test_probes_registered = [] {
  probe::register_probe("test_killed", killed_probe);
  probe::register_probe("test_throw", throwing_probe);
  probe::register_probe("test_echo", echo_probe);
  return true;
}();

std::string why(const BackendReport& report) { return report.unavailable.value_or(""); }

constexpr std::chrono::milliseconds k_generous{10'000};

}  // namespace

TEST_CASE("probe_in_child: the report of a probe that sees only the given environment",
          "[launch][probe]") {
  BackendReport report =
      probe_in_child("test_echo", DeviceKind::xpu, "Echo", {{"TEST_PROBE_NAME", "ok"}}, k_generous);
  INFO(why(report));
  REQUIRE(report.devices.size() == 1);
  CHECK(report.devices[0].name == "ok");
  CHECK_FALSE(report.unavailable);
}

TEST_CASE("probe_in_child: a probe that dies or throws is unavailable, and says how",
          "[launch][probe]") {
  BackendReport killed = probe_in_child("test_killed", DeviceKind::cuda, "Killed", {}, k_generous);
  CHECK(killed.kind == DeviceKind::cuda);
  CHECK(killed.devices.empty());
  CHECK(why(killed) == "the Killed probe died of signal 9 (Killed)");

  BackendReport threw = probe_in_child("test_throw", DeviceKind::xpu, "Throw", {}, k_generous);
  CHECK(threw.kind == DeviceKind::xpu);
  CHECK(why(threw) == "the Throw probe exited with status 2 without a report");

  BackendReport unknown = probe_in_child("no_such_probe", DeviceKind::xpu, "None", {}, k_generous);
  CHECK(why(unknown) == "the None probe exited with status 2 without a report");
}

TEST_CASE("probe mode: only the hidden flag as the first argument asks for it", "[launch][probe]") {
  char name[] = "gangrun";
  char flag[] = "--gangrun-internal-probe";
  char which[] = "cuda";
  char* probing[] = {name, flag, which, nullptr};
  char* launching[] = {name, which, flag, nullptr};
  CHECK(probe::is_probe_mode(3, probing));
  CHECK_FALSE(probe::is_probe_mode(3, launching));
  CHECK_FALSE(probe::is_probe_mode(1, probing));
}
