#include "accel/cpu_backend.hpp"
#include "util/host.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

TEST_CASE("host::usable_cpus lists this process's CPUs in order", "[util][host]") {
  std::vector<int> cpus = gangrun::host::usable_cpus();
  REQUIRE_FALSE(cpus.empty());
  CHECK(std::is_sorted(cpus.begin(), cpus.end()));
  CHECK(std::adjacent_find(cpus.begin(), cpus.end()) == cpus.end());
  CHECK(gangrun::host::usable_cpu_count() == static_cast<int>(cpus.size()));
}

TEST_CASE("the plan's CPU count and the CPU backend agree", "[util][host][accel]") {
  // One way of counting for both: "one worker per CPU" starts as many
  // workers as `gangrun devices` lists CPUs.
  auto report = gangrun::accel::probe_cpu();
  CHECK(static_cast<int>(report.devices.size()) == gangrun::host::usable_cpu_count());
}

TEST_CASE("host::host_name is never empty", "[util][host]") {
  CHECK_FALSE(gangrun::host::host_name().empty());
}

TEST_CASE("host::endpoint_text brackets an IPv6 address only", "[util][host]") {
  using gangrun::host::endpoint_text;
  CHECK(endpoint_text("127.0.0.1", 29500) == "127.0.0.1:29500");
  CHECK(endpoint_text("node1", "29500") == "node1:29500");
  CHECK(endpoint_text("::1", 29500) == "[::1]:29500");
  CHECK(endpoint_text("fe80::1%eth0", "?") == "[fe80::1%eth0]:?");
}
