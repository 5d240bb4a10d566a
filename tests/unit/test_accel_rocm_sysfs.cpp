#include "accel/rocm_sysfs.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using gangrun::accel::gfx_name;
using gangrun::accel::probe_rocm_sysfs;

namespace {

namespace fs = std::filesystem;

// A KFD topology like the kernel's, under a temporary root.
class FakeSysfs {
 public:
  FakeSysfs() {
    std::string pattern = (fs::temp_directory_path() / "gangrun-kfd-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
  }
  ~FakeSysfs() { fs::remove_all(root_); }

  void cpu_node(int number) {
    write(node(number) / "properties", "cpu_cores_count 32\nsimd_count 0\n");
    write(node(number) / "name", "\n");
  }

  void gpu_node(int number, const std::string& name, unsigned long long unique_id,
                unsigned long location_id, int render_minor, bool render_usable = true) {
    write(node(number) / "properties",
          "cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\n"
          "domain 0\nlocation_id " +
              std::to_string(location_id) + "\nunique_id " + std::to_string(unique_id) +
              "\ndrm_render_minor " + std::to_string(render_minor) + "\n");
    write(node(number) / "name", name + "\n");
    write(node(number) / "mem_banks" / "0" / "properties",
          "heap_type 1\nsize_in_bytes 68702699520\n");
    write(node(number) / "mem_banks" / "1" / "properties", "heap_type 0\nsize_in_bytes 1000\n");
    if (render_usable)
      write(root_ / "dev" / "dri" / ("renderD" + std::to_string(render_minor)), "");
  }

  std::string root() const { return root_.string(); }

 private:
  fs::path node(int number) const {
    return root_ / "sys/class/kfd/kfd/topology/nodes" / std::to_string(number);
  }
  static void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  fs::path root_;
};

}  // namespace

TEST_CASE("rocm sysfs: GPU nodes in node order, CPU nodes skipped", "[accel]") {
  FakeSysfs sysfs;
  sysfs.cpu_node(0);
  sysfs.gpu_node(1, "gfx90a", 0x1234abcdULL, (0xc1 << 8) | (0 << 3), 128);
  sysfs.gpu_node(2, "gfx90a", 0, (0xd1 << 8) | (1 << 3) | 1, 129);
  sysfs.gpu_node(10, "gfx90a", 0xfeedULL, (0x05 << 8), 130);
  auto report = probe_rocm_sysfs(sysfs.root());
  CHECK_FALSE(report.unavailable);
  REQUIRE(report.devices.size() == 3);
  CHECK(report.devices[0].index == 0);
  CHECK(report.devices[0].uuid == "GPU-000000001234ABCD");
  CHECK(report.devices[1].uuid.empty());                    // unique_id 0: no UUID to match
  CHECK(report.devices[2].uuid == "GPU-000000000000FEED");  // node 10 after node 2
  REQUIRE(report.devices[1].pci);
  CHECK(report.devices[1].pci->bus == 0xd1);
  CHECK(report.devices[1].pci->device == 1);
  CHECK(report.devices[1].pci->function == 1);
  CHECK(report.devices[0].architecture == "gfx90a");
  CHECK(report.devices[0].compute_units == 110);
  CHECK(report.devices[0].memory_bytes == 68702699520ULL);
}

TEST_CASE("rocm sysfs: GPUs whose render node cannot be opened are not visible", "[accel]") {
  FakeSysfs sysfs;
  sysfs.gpu_node(1, "gfx90a", 1, 0x100, 128, /*render_usable=*/false);
  sysfs.gpu_node(2, "gfx90a", 2, 0x200, 129);
  auto report = probe_rocm_sysfs(sysfs.root());
  REQUIRE(report.devices.size() == 1);
  CHECK(report.devices[0].uuid == "GPU-0000000000000002");
  CHECK(report.devices[0].index == 0);
}

TEST_CASE("rocm sysfs: no KFD topology is no AMD GPU, with the reason", "[accel]") {
  FakeSysfs sysfs;
  auto report = probe_rocm_sysfs(sysfs.root());
  CHECK(report.devices.empty());
  REQUIRE(report.unavailable);
  CHECK_THAT(*report.unavailable, Catch::Contains("kfd/topology/nodes"));
}

TEST_CASE("rocm sysfs: gfx names from gfx_target_version", "[accel]") {
  CHECK(gfx_name(90402) == "gfx942");
  CHECK(gfx_name(90010) == "gfx90a");
  CHECK(gfx_name(110000) == "gfx1100");
  CHECK(gfx_name(90008) == "gfx908");
}
