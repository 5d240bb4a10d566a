#include "accel/rocm_sysfs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gangrun::accel {
namespace {

namespace fs = std::filesystem;

// KFD's "key value" lines, values decimal.
std::map<std::string, unsigned long long> read_properties(const fs::path& file) {
  std::map<std::string, unsigned long long> properties;
  std::ifstream in(file);
  std::string key;
  unsigned long long value = 0;
  while (in >> key >> value) properties[key] = value;
  return properties;
}

unsigned long long get(const std::map<std::string, unsigned long long>& properties,
                       const std::string& key) {
  auto it = properties.find(key);
  return it == properties.end() ? 0 : it->second;
}

std::string read_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// VRAM is the sum of the frame-buffer heaps (public 1, private 2); the
// node's own local_mem_size is always printed as 0.
std::uint64_t vram_bytes(const fs::path& node) {
  std::uint64_t total = 0;
  std::error_code error;
  for (const auto& bank : fs::directory_iterator(node / "mem_banks", error)) {
    auto properties = read_properties(bank.path() / "properties");
    unsigned long long heap = get(properties, "heap_type");
    if (heap == 1 || heap == 2) total += get(properties, "size_in_bytes");
  }
  return total;
}

bool render_node_usable(const fs::path& root, unsigned long long minor) {
  fs::path render = root / "dev" / "dri" / ("renderD" + std::to_string(minor));
  int fd = ::open(render.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

std::string gfx_name(unsigned long gfx_target_version) {
  unsigned long major = gfx_target_version / 10000;
  unsigned long minor = (gfx_target_version / 100) % 100;
  unsigned long stepping = gfx_target_version % 100;
  char text[32];
  std::snprintf(text, sizeof text, "gfx%lu%lx%lx", major, minor, stepping);
  return text;
}

BackendReport probe_rocm_sysfs(const std::string& root) {
  BackendReport report;
  report.kind = DeviceKind::rocm;
  fs::path nodes_dir = fs::path(root) / "sys/class/kfd/kfd/topology/nodes";
  std::error_code error;
  if (!fs::is_directory(nodes_dir, error)) {
    report.unavailable = "no AMD GPU driver: " + nodes_dir.string() + " does not exist";
    return report;
  }
  std::vector<std::pair<unsigned long, fs::path>> nodes;
  for (const auto& entry : fs::directory_iterator(nodes_dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(),
                                     [](unsigned char c) { return std::isdigit(c) != 0; }))
      continue;
    nodes.emplace_back(std::stoul(name), entry.path());
  }
  std::sort(nodes.begin(), nodes.end());

  int skipped = 0;
  for (const auto& [number, node] : nodes) {
    auto properties = read_properties(node / "properties");
    if (get(properties, "simd_count") == 0) continue;  // a CPU node
    if (!render_node_usable(root, get(properties, "drm_render_minor"))) {
      ++skipped;
      continue;
    }
    Device device;
    device.kind = DeviceKind::rocm;
    device.index = static_cast<int>(report.devices.size());
    device.name = read_line(node / "name");
    if (unsigned long long unique = get(properties, "unique_id"); unique != 0) {
      char uuid[32];
      std::snprintf(uuid, sizeof uuid, "GPU-%016llX", unique);
      device.uuid = uuid;
    }
    unsigned long long location =
        get(properties, "location_id") & 0x0fffffffULL;  // partition bits off
    device.pci = PciAddress{static_cast<std::uint32_t>(get(properties, "domain")),
                            static_cast<std::uint32_t>((location >> 8) & 0xff),
                            static_cast<std::uint32_t>((location >> 3) & 0x1f),
                            static_cast<std::uint32_t>(location & 0x7)};
    device.memory_bytes = vram_bytes(node);
    device.architecture =
        gfx_name(static_cast<unsigned long>(get(properties, "gfx_target_version")));
    if (unsigned long long per_cu = get(properties, "simd_per_cu"); per_cu != 0) {
      device.compute_units = static_cast<int>(get(properties, "simd_count") / per_cu);
    }
    report.devices.push_back(std::move(device));
  }
  if (report.devices.empty()) {
    report.unavailable = skipped > 0 ? std::to_string(skipped) +
                                           " AMD GPU(s) in the KFD topology, but none of their "
                                           "render nodes under /dev/dri can be opened"
                                     : "the KFD topology lists no GPU";
  }
  return report;
}

}  // namespace gangrun::accel
