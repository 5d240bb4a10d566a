// The CUDA backend through the real dlopen path, against tests/helpers/
// fake_cuda.cpp (built as a libcuda.so.1 that plays a scripted machine).
// Every probe runs in a fresh child (probe_cuda_in_child), as in gangrun: the
// driver reads CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER once per process.
#include "accel/cuda_backend.hpp"
#include "accel/report_json.hpp"
#include "probe/probe_runner.hpp"
#include "util/dynamic_library.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#ifndef FAKE_CUDA_LIBRARY
#error "tests/CMakeLists.txt defines FAKE_CUDA_LIBRARY as the built fake libcuda.so.1"
#endif

using namespace gangrun;
using namespace gangrun::accel;
using Catch::Matchers::Contains;
using gangrun::probe::probe_cuda_in_child;

namespace {

// A file in the temp directory, removed at exit.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gangrun-fake-cuda-XXXXXX").string();
    int fd = ::mkstemp(pattern.data());
    if (fd >= 0) ::close(fd);
    path_ = pattern;
    std::ofstream(path_) << content;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Four GPUs on a mixed node, listed in neither order. By PCI address:
// slow-a (1a), fast-a (3b), slow-b (5e), fast-b (domain 1). FASTEST_FIRST
// (speed rank, then PCI): fast-a, fast-b, slow-a, slow-b. fast-a and slow-a
// share the UUID prefix "1a".
constexpr const char* k_slow_a = "GPU-1a000000-0000-4000-8000-00000000001a";
constexpr const char* k_fast_a = "GPU-1a3b0000-0000-4000-8000-00000000003b";
constexpr const char* k_slow_b = "GPU-5e000000-0000-4000-8000-00000000005e";
constexpr const char* k_fast_b = "GPU-04000000-0000-4000-8000-000000000104";

const std::string& mixed_node() {
  static TempFile file(R"({
    "driver_version": 12060,
    "gpus": [
      {"name": "Tesla T4", "uuid": "5e000000-0000-4000-8000-00000000005e",
       "pci": "0000:5e:00.0", "memory": 16106127360, "cc": "7.5", "sms": 40, "speed_rank": 1},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "04000000000040008000000000000104",
       "pci": "0001:04:00.0", "memory": 85899345920, "cc": "9.0", "sms": 132, "speed_rank": 0},
      {"name": "Tesla T4", "uuid": "1a000000-0000-4000-8000-00000000001a",
       "pci": "0000:1a:00.0", "memory": 16106127360, "cc": "7.5", "sms": 40, "speed_rank": 1},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "1a3b0000-0000-4000-8000-00000000003b",
       "pci": "0000:3b:00.0", "memory": 85899345920, "cc": "9.0", "sms": 132, "speed_rank": 0}
    ]})");
  return file.path();
}

// One A100 split into two MIG instances, and a whole GPU.
constexpr const char* k_mig_first = "MIG-a1110000-0000-4000-8000-000000000001";
constexpr const char* k_mig_second = "MIG-a1220000-0000-4000-8000-000000000002";

const std::string& mig_node() {
  static TempFile file(R"({
    "gpus": [
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "a1000000-0000-4000-8000-0000000000a1",
       "pci": "0000:07:00.0", "memory": 85899345920, "cc": "8.0", "sms": 98,
       "mig": [{"uuid": "a1110000-0000-4000-8000-000000000001", "profile": "1g.10gb",
                "memory": 10737418240, "sms": 14},
               {"uuid": "a1220000-0000-4000-8000-000000000002", "profile": "3g.40gb",
                "memory": 42949672960, "sms": 42}]},
      {"name": "NVIDIA A100-SXM4-80GB", "uuid": "b2000000-0000-4000-8000-0000000000b2",
       "pci": "0000:0f:00.0", "memory": 85899345920, "cc": "8.0", "sms": 108}
    ]})");
  return file.path();
}

// The child's whole environment: the fake driver, a machine, and extra.
EnvMap fake_env(const std::string& machine, const EnvMap& extra = {}) {
  EnvMap env{{"GANGRUN_CUDA_LIBRARY", FAKE_CUDA_LIBRARY}, {"FAKE_CUDA_MACHINE", machine}};
  for (const auto& [name, value] : extra) env[name] = value;
  return env;
}

std::vector<std::string> uuids(const BackendReport& report) {
  std::vector<std::string> out;
  for (const Device& device : report.devices) out.push_back(device.uuid);
  return out;
}

std::string why(const BackendReport& report) { return report.unavailable.value_or("<available>"); }

}  // namespace

TEST_CASE("CUDA probe: PCI_BUS_ID enumerates by PCI address", "[accel][cuda]") {
  BackendReport report =
      probe_cuda_in_child(fake_env(mixed_node(), {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  INFO(why(report));
  REQUIRE_FALSE(report.unavailable);
  CHECK(report.kind == DeviceKind::cuda);
  CHECK(report.driver_version == "12.6");
  CHECK(uuids(report) == std::vector<std::string>{k_slow_a, k_fast_a, k_slow_b, k_fast_b});
  for (std::size_t i = 0; i < report.devices.size(); ++i) {
    CHECK(report.devices[i].index == static_cast<int>(i));
  }
}

TEST_CASE("CUDA probe: FASTEST_FIRST, the default, puts fast GPUs first", "[accel][cuda]") {
  std::vector<std::string> expected{k_fast_a, k_fast_b, k_slow_a, k_slow_b};
  CHECK(uuids(probe_cuda_in_child(fake_env(mixed_node()))) == expected);
  CHECK(uuids(probe_cuda_in_child(
            fake_env(mixed_node(), {{"CUDA_DEVICE_ORDER", "FASTEST_FIRST"}}))) == expected);
}

TEST_CASE("CUDA probe: CUDA_VISIBLE_DEVICES indices follow CUDA_DEVICE_ORDER", "[accel][cuda]") {
  BackendReport by_pci = probe_cuda_in_child(fake_env(
      mixed_node(), {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "2,0"}}));
  INFO(why(by_pci));
  CHECK(uuids(by_pci) == std::vector<std::string>{k_slow_b, k_slow_a});
  REQUIRE(by_pci.devices.size() == 2);
  CHECK(by_pci.devices[0].index == 0);
  CHECK(by_pci.devices[1].index == 1);

  BackendReport fastest =
      probe_cuda_in_child(fake_env(mixed_node(), {{"CUDA_VISIBLE_DEVICES", "2,0"}}));
  CHECK(uuids(fastest) == std::vector<std::string>{k_slow_a, k_fast_a});

  BackendReport stops = probe_cuda_in_child(fake_env(
      mixed_node(), {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", "0,2,-1,1"}}));
  CHECK(uuids(stops) == std::vector<std::string>{k_slow_a, k_slow_b});
}

TEST_CASE("CUDA probe: UUID prefixes in CUDA_VISIBLE_DEVICES", "[accel][cuda]") {
  BackendReport unique = probe_cuda_in_child(
      fake_env(mixed_node(), {{"CUDA_VISIBLE_DEVICES", "GPU-04,GPU-1a0,GPU-1a3b0000-0000"}}));
  INFO(why(unique));
  CHECK(uuids(unique) == std::vector<std::string>{k_fast_b, k_slow_a, k_fast_a});

  // "GPU-1a" names two GPUs: the list ends there.
  BackendReport ambiguous = probe_cuda_in_child(
      fake_env(mixed_node(), {{"CUDA_VISIBLE_DEVICES", "GPU-5e,GPU-1a,GPU-04"}}));
  CHECK(uuids(ambiguous) == std::vector<std::string>{k_slow_b});
}

TEST_CASE("CUDA probe: an empty CUDA_VISIBLE_DEVICES hides every GPU", "[accel][cuda]") {
  BackendReport report =
      probe_cuda_in_child(fake_env(mixed_node(), {{"CUDA_VISIBLE_DEVICES", ""}}));
  CHECK(report.devices.empty());
  CHECK_THAT(why(report), Contains("cuInit failed: no CUDA-capable device is detected (100)"));
  CHECK(report.driver_version == "12.6");

  // A duplicate empties the list too (the emulated rule).
  BackendReport duplicate =
      probe_cuda_in_child(fake_env(mixed_node(), {{"CUDA_VISIBLE_DEVICES", "1,1"}}));
  CHECK(duplicate.devices.empty());
  CHECK_THAT(why(duplicate), Contains("(100)"));
}

TEST_CASE("CUDA probe: device attributes", "[accel][cuda]") {
  BackendReport report =
      probe_cuda_in_child(fake_env(mixed_node(), {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  INFO(why(report));
  REQUIRE(report.devices.size() == 4);

  const Device& fast_b = report.devices[3];
  CHECK(fast_b.kind == DeviceKind::cuda);
  CHECK(fast_b.name == "NVIDIA H100 80GB HBM3");
  CHECK(fast_b.uuid == k_fast_b);
  REQUIRE(fast_b.pci);
  CHECK(*fast_b.pci == PciAddress{1, 4, 0, 0});
  CHECK(fast_b.memory_bytes == 85899345920ULL);  // over 4 GiB: the _v2 entry point was used
  CHECK(fast_b.architecture == "9.0");
  CHECK(fast_b.compute_units == 132);
  CHECK_FALSE(fast_b.mig);

  const Device& slow_a = report.devices[0];
  CHECK(slow_a.name == "Tesla T4");
  REQUIRE(slow_a.pci);
  CHECK(*slow_a.pci == PciAddress{0, 0x1a, 0, 0});
  CHECK(slow_a.memory_bytes == 16106127360ULL);
  CHECK(slow_a.architecture == "7.5");
  CHECK(slow_a.compute_units == 40);

  std::regex form("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (const Device& device : report.devices) CHECK(std::regex_match(device.uuid, form));
}

TEST_CASE("CUDA probe: a MIG instance has a MIG- UUID, one per process", "[accel][cuda]") {
  BackendReport one =
      probe_cuda_in_child(fake_env(mig_node(), {{"CUDA_VISIBLE_DEVICES", "MIG-a122"}}));
  INFO(why(one));
  REQUIRE(one.devices.size() == 1);
  CHECK(one.devices[0].mig);
  CHECK(one.devices[0].uuid == k_mig_second);
  CHECK(one.devices[0].name == "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
  CHECK(one.devices[0].memory_bytes == 42949672960ULL);
  CHECK(one.devices[0].compute_units == 42);

  BackendReport two = probe_cuda_in_child(fake_env(
      mig_node(), {{"CUDA_VISIBLE_DEVICES", std::string(k_mig_first) + "," + k_mig_second}}));
  CHECK(uuids(two) == std::vector<std::string>{k_mig_first});

  // The whole GPU next to it is not MIG; the MIG-enabled board is
  // enumerated as its first instance.
  BackendReport all =
      probe_cuda_in_child(fake_env(mig_node(), {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  REQUIRE(all.devices.size() == 2);
  CHECK(all.devices[0].uuid == k_mig_first);
  CHECK(all.devices[0].mig);
  CHECK(all.devices[1].uuid == "GPU-b2000000-0000-4000-8000-0000000000b2");
  CHECK_FALSE(all.devices[1].mig);
}

TEST_CASE("CUDA probe: a missing library means no CUDA devices", "[accel][cuda]") {
  const std::string missing = "/nonexistent/gangrun-test/libcuda.so.1";
  EnvMap env{{"GANGRUN_CUDA_LIBRARY", missing}};

  // dlopen fails before any cuInit, so this one is safe in-process.
  BackendReport here = probe_cuda(env);
  CHECK(here.devices.empty());
  CHECK(here.kind == DeviceKind::cuda);
  CHECK_THAT(why(here), Contains(missing) && Contains("not found"));

  BackendReport child = probe_cuda_in_child(env);
  CHECK(child.devices.empty());
  CHECK_THAT(why(child), Contains(missing));

  CHECK(cuda_library_path({}) == "libcuda.so.1");
  CHECK(cuda_library_path(env) == missing);
}

TEST_CASE("CUDA probe: a failing cuInit is reported with the driver's text", "[accel][cuda]") {
  BackendReport mismatch =
      probe_cuda_in_child(fake_env(mixed_node(), {{"FAKE_CUDA_FAIL_INIT", "803"}}));
  CHECK(mismatch.devices.empty());
  CHECK(why(mismatch) ==
        "cuInit failed: system has unsupported display driver / cuda driver combination (803)");
  CHECK(mismatch.driver_version == "12.6");

  BackendReport unknown =
      probe_cuda_in_child(fake_env(mixed_node(), {{"FAKE_CUDA_FAIL_INIT", "4242"}}));
  CHECK(why(unknown) == "cuInit failed: unknown CUresult (4242)");

  // No FAKE_CUDA_MACHINE: a driver with no GPU.
  BackendReport no_gpu = probe_cuda_in_child({{"GANGRUN_CUDA_LIBRARY", FAKE_CUDA_LIBRARY}});
  CHECK(no_gpu.devices.empty());
  CHECK_THAT(why(no_gpu), Contains("(100)"));
}

TEST_CASE("CUDA probe: a hung driver is killed after the timeout", "[accel][cuda]") {
  auto start = std::chrono::steady_clock::now();
  BackendReport report = probe_cuda_in_child(fake_env(mixed_node(), {{"FAKE_CUDA_HANG_INIT", "1"}}),
                                             std::chrono::milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(report.devices.empty());
  CHECK(why(report) == "the CUDA probe did not answer within 300 ms");
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("CUDA UUID and version text", "[accel][cuda]") {
  cuda_api::CUuuid uuid{};
  const unsigned char bytes[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                   0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(bytes[i]);
  CHECK(cuda_uuid_text(uuid, false) == "GPU-01234567-89ab-cdef-fedc-ba9876543210");
  CHECK(cuda_uuid_text(uuid, true) == "MIG-01234567-89ab-cdef-fedc-ba9876543210");

  CHECK(cuda_version_text(12060) == "12.6");
  CHECK(cuda_version_text(13000) == "13.0");
  CHECK(cuda_version_text(11040) == "11.4");
}

TEST_CASE("BackendReport JSON round trip", "[accel]") {
  BackendReport report;
  report.kind = DeviceKind::cuda;
  report.driver_version = "12.6";
  Device with_pci;
  with_pci.index = 0;
  with_pci.name = "NVIDIA H100 80GB HBM3";
  with_pci.uuid = k_fast_a;
  with_pci.pci = PciAddress{0, 0x3b, 0, 0};
  with_pci.memory_bytes = 85899345920ULL;
  with_pci.architecture = "9.0";
  with_pci.compute_units = 132;
  Device without_pci;
  without_pci.kind = DeviceKind::xpu;
  without_pci.index = 1;
  without_pci.tiles = 2;
  without_pci.mig = true;
  report.devices = {with_pci, without_pci};

  Expected<BackendReport> back = report_from_json(report_to_json(report));
  REQUIRE(back);
  CHECK(back->kind == DeviceKind::cuda);
  CHECK(back->driver_version == "12.6");
  CHECK_FALSE(back->unavailable);
  REQUIRE(back->devices.size() == 2);
  CHECK(back->devices[0].name == with_pci.name);
  CHECK(back->devices[0].uuid == with_pci.uuid);
  CHECK(back->devices[0].pci == with_pci.pci);
  CHECK(back->devices[0].memory_bytes == with_pci.memory_bytes);
  CHECK(back->devices[0].architecture == "9.0");
  CHECK(back->devices[0].compute_units == 132);
  CHECK(back->devices[1].kind == DeviceKind::xpu);
  CHECK(back->devices[1].index == 1);
  CHECK_FALSE(back->devices[1].pci);
  CHECK(back->devices[1].tiles == 2);
  CHECK(back->devices[1].mig);

  BackendReport down;
  down.unavailable = "cuInit failed: no CUDA-capable device is detected (100)";
  Expected<BackendReport> down_back = report_from_json(report_to_json(down));
  REQUIRE(down_back);
  CHECK(down_back->unavailable == down.unavailable);

  CHECK_FALSE(report_from_json("not json"));
  CHECK_FALSE(report_from_json("{}"));
  CHECK_FALSE(report_from_json(
      R"({"kind": "tpu", "driver_version": "", "unavailable": null, "devices": []})"));
}

TEST_CASE("DynamicLibrary names what it cannot find", "[accel][util]") {
  Expected<DynamicLibrary> missing = DynamicLibrary::open("/nonexistent/gangrun-test/libx.so");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == ErrorCode::not_found);
  CHECK_THAT(missing.error().message(), Contains("/nonexistent/gangrun-test/libx.so"));

  Expected<DynamicLibrary> fake = DynamicLibrary::open(FAKE_CUDA_LIBRARY);
  REQUIRE(fake);
  CHECK(fake->path() == FAKE_CUDA_LIBRARY);
  CHECK(fake->symbol<cuda_api::cuDriverGetVersion_fn>("cuDriverGetVersion"));
  Expected<void (*)()> absent = fake->symbol<void()>("cuNoSuchEntryPoint");
  REQUIRE_FALSE(absent);
  CHECK(absent.error().code() == ErrorCode::not_found);
  CHECK_THAT(absent.error().message(),
             Contains("cuNoSuchEntryPoint") && Contains(FAKE_CUDA_LIBRARY));
  CHECK(fake->optional_symbol<void()>("cuNoSuchEntryPoint") == nullptr);
  CHECK(fake->optional_symbol<cuda_api::cuGetErrorString_fn>("cuGetErrorString") != nullptr);

  DynamicLibrary moved = std::move(*fake);
  CHECK(moved.symbol<cuda_api::cuInit_fn>("cuInit"));
}
