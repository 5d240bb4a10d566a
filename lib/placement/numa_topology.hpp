// This host's CPU topology as Linux's sysfs shows it, read under a root
// directory ("/" on a real host; GANGRUN_SYSFS_ROOT points tests at a fake
// tree). Only what --numa_binding needs (numa_binding.hpp), read when asked,
// so a mode reads no file it does not use.
//
// Every error is ErrorCode::usage naming the file that is missing or does not
// read, so the user knows what the binding could not learn.
#pragma once

#include "accel/device.hpp"
#include "util/error.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::placement {

// "0-3,8,10-11" (sysfs's cpulist form) -> {0,1,2,3,8,10,11}; blanks around
// items and a trailing newline are allowed. A usage error says what is wrong
// with junk (a word, a range that runs down).
Expected<std::set<int>> parse_cpu_list(std::string_view text);

// "0000:1a:00.0": the name of a PCI device's directory under
// /sys/bus/pci/devices.
std::string pci_text(const accel::PciAddress& pci);

class NumaTopology {
 public:
  explicit NumaTopology(std::filesystem::path root) : root_(std::move(root)) {}

  // The NUMA node of a PCI device (.../numa_node). The kernel writes -1 when
  // the firmware names none, usual on a host with one node; like torchrun,
  // that is node 0.
  Expected<int> node_of_device(const accel::PciAddress& pci) const;
  // Every CPU of a NUMA node (nodeN/cpulist), usable or not.
  Expected<std::set<int>> node_cpus(int node) const;
  // The NUMA nodes (the nodeN directories), ascending.
  Expected<std::vector<int>> nodes() const;
  // The socket of a CPU (topology/physical_package_id).
  Expected<int> socket_of(int cpu) const;
  // The CPUs of a CPU's physical core, itself included (topology/thread_siblings_list).
  Expected<std::set<int>> core_of(int cpu) const;
  // The CPUs sharing a CPU's last-level cache: of its cache/indexK entries
  // holding data (type Data or Unified), the one of the highest level. On
  // AMD EPYC that L3 is a core complex.
  Expected<std::set<int>> last_level_cache_of(int cpu) const;

 private:
  std::filesystem::path cpu_dir(int cpu) const;
  std::filesystem::path root_;
};

}  // namespace gangrun::placement
