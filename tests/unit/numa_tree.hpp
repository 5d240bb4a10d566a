// Fake sysfs trees for --numa_binding's unit tests: the files the kernel
// writes for NUMA nodes, CPUs (topology, caches) and PCI devices, under a
// temporary root that NumaTopology reads instead of "/".
#pragma once

#include "placement/numa_topology.hpp"
#include "temp_dir.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gangrun::test {

// One logical CPU as sysfs describes it.
struct FakeCpu {
  int cpu = 0;
  int socket = 0;
  std::string siblings;  // thread_siblings_list, e.g. "0,32"
  std::string l3;        // the L3's shared_cpu_list; empty: no cache directory at all
};

class NumaTree {
 public:
  const TempDir& root() const { return dir_; }
  std::string path() const { return dir_.path().string(); }

  void node(int node, const std::string& cpulist) const {
    dir_.write(node_dir(node) + "/cpulist", cpulist + "\n");
  }
  // A node's directory without its cpulist.
  void node_without_cpulist(int node) const { dir_.write(node_dir(node) + "/meminfo", ""); }
  void device(const std::string& pci, const std::string& numa_node) const {
    dir_.write("sys/bus/pci/devices/" + pci + "/numa_node", numa_node + "\n");
  }
  void cpu(const FakeCpu& c) const {
    std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(c.cpu);
    dir_.write(dir + "/topology/physical_package_id", std::to_string(c.socket) + "\n");
    dir_.write(dir + "/topology/thread_siblings_list", c.siblings + "\n");
    if (c.l3.empty()) return;
    // As on x86: L1 data and instruction, L2, L3; only data caches count.
    cache(dir + "/cache/index0", "Data", 1, c.siblings);
    cache(dir + "/cache/index1", "Instruction", 1, c.siblings);
    cache(dir + "/cache/index2", "Unified", 2, c.siblings);
    cache(dir + "/cache/index3", "Unified", 3, c.l3);
  }
  void remove(const std::string& relative) const {
    std::filesystem::remove_all(dir_.path() / relative);
  }
  void write(const std::string& relative, const std::string& text) const {
    dir_.write(relative, text);
  }

 private:
  static std::string node_dir(int node) {
    return "sys/devices/system/node/node" + std::to_string(node);
  }
  void cache(const std::string& dir, const std::string& type, int level,
             const std::string& shared) const {
    dir_.write(dir + "/type", type + "\n");
    dir_.write(dir + "/level", std::to_string(level) + "\n");
    dir_.write(dir + "/shared_cpu_list", shared + "\n");
  }
  TempDir dir_;
};

// The PCI address of GPU i (0-7) of the trees below, a bus each, and its
// directory's name ("0000:18:00.0").
inline accel::PciAddress gpu_address(int gpu) {
  static constexpr std::uint32_t buses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  return {.domain = 0, .bus = buses[gpu], .device = 0, .function = 0};
}
inline std::string gpu_pci(int gpu) { return placement::pci_text(gpu_address(gpu)); }

// Two sockets, one NUMA node each, 16 physical cores of 2 threads per
// socket, numbered as Linux does: socket 0's cores are CPUs 0-15 with their
// second threads 32-47, socket 1's 16-31 with 48-63. One L3 per socket.
// GPUs 0-3 sit on node 0, 4-7 on node 1.
inline void two_socket_eight_gpus(const NumaTree& tree) {
  tree.node(0, "0-15,32-47");
  tree.node(1, "16-31,48-63");
  for (int core = 0; core < 32; ++core) {
    int socket = core / 16;
    std::string siblings = std::to_string(core) + "," + std::to_string(core + 32);
    std::string l3 = socket == 0 ? "0-15,32-47" : "16-31,48-63";
    tree.cpu({.cpu = core, .socket = socket, .siblings = siblings, .l3 = l3});
    tree.cpu({.cpu = core + 32, .socket = socket, .siblings = siblings, .l3 = l3});
  }
  for (int gpu = 0; gpu < 8; ++gpu) tree.device(gpu_pci(gpu), gpu < 4 ? "0" : "1");
}

// One socket, one NUMA node, 4 core complexes (L3 domains) of 8 cores of 2
// threads: complex k holds cores 8k..8k+7, CPUs 8k..8k+7 and 32+8k..32+8k+7.
// Four GPUs whose numa_node is -1, as the kernel writes on a one-node host.
inline void one_socket_four_complexes(const NumaTree& tree) {
  tree.node(0, "0-63");
  for (int core = 0; core < 32; ++core) {
    int complex = core / 8;
    std::string siblings = std::to_string(core) + "," + std::to_string(core + 32);
    std::string l3 = std::to_string(8 * complex) + "-" + std::to_string(8 * complex + 7) + "," +
                     std::to_string(32 + 8 * complex) + "-" + std::to_string(32 + 8 * complex + 7);
    tree.cpu({.cpu = core, .socket = 0, .siblings = siblings, .l3 = l3});
    tree.cpu({.cpu = core + 32, .socket = 0, .siblings = siblings, .l3 = l3});
  }
  for (int gpu = 0; gpu < 4; ++gpu) tree.device(gpu_pci(gpu), "-1");
}

}  // namespace gangrun::test
