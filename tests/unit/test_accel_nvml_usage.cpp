// NVML through the real dlopen path, against tests/helpers/fake_nvml.cpp
// (built as a libnvidia-ml.so.1 that plays a scripted machine, and again as
// a driver before 11.x with only the two-field process list).
#include "accel/nvml_usage.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#ifndef FAKE_NVML_LIBRARY
#error "tests/CMakeLists.txt defines FAKE_NVML_LIBRARY as the built fake libnvidia-ml.so.1"
#endif

using namespace gangrun;
using namespace gangrun::accel;

namespace {

constexpr const char* k_machine = R"({"gpus": [
  {"uuid": "GPU-11111111-2222-3333-4444-555555555555", "utilization": 87,
   "memory_total": 85899345920, "memory_used": 3221225472,
   "processes": [{"pid": 4242, "memory": 2147483648}, {"pid": 77, "memory": null}]},
  {"uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
   "memory_total": 85899345920, "memory_used": 1073741824, "processes": []}]})";

// FAKE_NVML_MACHINE names the machine file while it lives (the fake reads
// the process's own environment, as the driver would).
class FakeMachine {
 public:
  explicit FakeMachine(const std::string& json) : path_(dir_ / "machine.json") {
    std::ofstream(path_) << json;
    ::setenv("FAKE_NVML_MACHINE", path_.c_str(), 1);
  }
  ~FakeMachine() { ::unsetenv("FAKE_NVML_MACHINE"); }
  const std::string& path() const { return path_; }

 private:
  test::TempDir dir_;
  std::string path_;
};

EnvMap env_with(const std::string& library) { return {{"GANGRUN_NVML_LIBRARY", library}}; }

}  // namespace

TEST_CASE("NVML is libnvidia-ml.so.1 unless GANGRUN_NVML_LIBRARY names another", "[accel]") {
  CHECK(nvml_library_path({}) == "libnvidia-ml.so.1");
  CHECK(nvml_library_path({{"GANGRUN_NVML_LIBRARY", ""}}) == "libnvidia-ml.so.1");
  CHECK(nvml_library_path(env_with("/opt/nvml.so")) == "/opt/nvml.so");
}

TEST_CASE("NVML's reading gives each GPU's use and each process's memory", "[accel]") {
  FakeMachine machine(k_machine);
  Expected<NvmlSession> session = NvmlSession::open(env_with(FAKE_NVML_LIBRARY));
  REQUIRE(session);
  Expected<std::vector<GpuUsage>> gpus = session->read();
  REQUIRE(gpus);
  REQUIRE(gpus->size() == 2);
  const GpuUsage& first = (*gpus)[0];
  CHECK(first.uuid == "GPU-11111111-2222-3333-4444-555555555555");
  CHECK(first.utilization_pct == 87U);
  CHECK(first.memory_used == 3221225472ULL);
  CHECK(first.memory_total == 85899345920ULL);
  REQUIRE(first.processes.size() == 2);
  CHECK(first.processes[0].pid == 4242);
  CHECK(first.processes[0].bytes == 2147483648ULL);
  CHECK_FALSE(first.processes[1].bytes);    // the driver could not say
  CHECK_FALSE((*gpus)[1].utilization_pct);  // not supported, as on a MIG device
}

TEST_CASE("A driver before 11.x gives the process list in its two-field layout", "[accel]") {
  void* old = ::dlopen(FAKE_NVML_OLD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(old);
  CHECK(::dlsym(old, "nvmlDeviceGetComputeRunningProcesses_v3") == nullptr);
  FakeMachine machine(k_machine);
  {
    Expected<NvmlSession> session = NvmlSession::open(env_with(FAKE_NVML_OLD_LIBRARY));
    REQUIRE(session);
    Expected<std::vector<GpuUsage>> gpus = session->read();
    REQUIRE(gpus);
    REQUIRE((*gpus)[0].processes.size() == 2);
    CHECK((*gpus)[0].processes[0].pid == 4242);
    CHECK((*gpus)[0].processes[0].bytes == 2147483648ULL);
  }
  ::dlclose(old);
}

TEST_CASE("Without a driver NVML's session fails with NVML's words", "[accel]") {
  ::unsetenv("FAKE_NVML_MACHINE");
  Expected<NvmlSession> session = NvmlSession::open(env_with(FAKE_NVML_LIBRARY));
  REQUIRE_FALSE(session);
  CHECK_THAT(session.error().message(), Catch::Matchers::Contains("Driver Not Loaded"));
  Expected<NvmlSession> missing = NvmlSession::open(env_with("/nonexistent/libnvidia-ml.so.1"));
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(),
             Catch::Matchers::Contains("/nonexistent/libnvidia-ml.so.1"));
}

TEST_CASE("A rank's GPU use is its busiest GPU and its own process's memory", "[accel]") {
  std::vector<GpuUsage> gpus(2);
  gpus[0].uuid = "GPU-a";
  gpus[0].utilization_pct = 40;
  gpus[0].memory_used = 5000;
  gpus[0].processes = {{10, 1000}, {11, 3000}};
  gpus[1].uuid = "GPU-b";
  gpus[1].utilization_pct = 90;
  gpus[1].memory_used = 700;
  gpus[1].processes = {{10, 500}};

  RankGpuUsage both = usage_of_rank(gpus, 10, {"GPU-a", "GPU-b"}, true);
  CHECK(both.utilization_pct == 90U);
  CHECK(both.memory_bytes == 1500ULL);

  RankGpuUsage other = usage_of_rank(gpus, 11, {"GPU-a"}, true);
  CHECK(other.utilization_pct == 40U);
  CHECK(other.memory_bytes == 3000ULL);

  SECTION("a process the driver does not list (another pid namespace)") {
    // Its GPU to itself: the GPU's memory is the rank's.
    CHECK(usage_of_rank(gpus, 99, {"GPU-b"}, false).memory_bytes == 700ULL);
    // Shared with other ranks: nothing honest to say.
    CHECK_FALSE(usage_of_rank(gpus, 99, {"GPU-a"}, true).memory_bytes);
  }
  SECTION("no GPU") {
    RankGpuUsage none = usage_of_rank(gpus, 10, {}, false);
    CHECK_FALSE(none.utilization_pct);
    CHECK_FALSE(none.memory_bytes);
  }
}

TEST_CASE("The GPU sampler keeps the latest reading and sees the GPUs change", "[accel]") {
  FakeMachine machine(k_machine);
  GpuSampler sampler(env_with(FAKE_NVML_LIBRARY), std::chrono::milliseconds(10));
  auto wait_for = [&](auto ready) {
    // Bounded: the thread reads every 10 ms.
    for (int i = 0; i < 3000; ++i) {
      if (std::optional<GpuReading> reading = sampler.latest(); reading && ready(*reading))
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  REQUIRE(wait_for([](const GpuReading& r) { return r.gpus.size() == 2; }));
  std::string changed = k_machine;
  changed.replace(changed.find("\"utilization\": 87"), 17, "\"utilization\": 12");
  { std::ofstream(machine.path() + ".new") << changed; }
  std::rename((machine.path() + ".new").c_str(), machine.path().c_str());
  CHECK(wait_for(
      [](const GpuReading& r) { return !r.gpus.empty() && r.gpus[0].utilization_pct == 12U; }));
}

TEST_CASE("Without NVML the sampler says why once", "[accel]") {
  GpuSampler sampler(env_with("/nonexistent/libnvidia-ml.so.1"), std::chrono::milliseconds(10));
  std::optional<GpuReading> reading;
  for (int i = 0; i < 3000 && !reading; ++i) {
    reading = sampler.latest();
    if (!reading) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(reading);
  CHECK(reading->gpus.empty());
  CHECK_THAT(reading->unavailable, Catch::Matchers::Contains("libnvidia-ml.so.1"));
}
