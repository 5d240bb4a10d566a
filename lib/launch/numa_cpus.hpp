// --numa_binding (torchrun's --numa-binding): the CPUs each local worker is
// pinned to, near the accelerator torchrun would give it, by the rules of
// placement/numa_binding.hpp. The worker's accelerator is the selected
// device its LOCAL_RANK indexes (shared visibility; under --worker-per-task
// that is srun's SLURM_LOCALID), or the first of its own (--visible-devices
// per-rank); the accelerators shared out on a NUMA node are every selected
// one, as torchrun counts every visible one.
#pragma once

#include "config/options.hpp"
#include "launch/node_devices.hpp"
#include "util/error.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::launch {

struct NumaRequest {
  config::NumaBinding mode = config::NumaBinding::node;
  int devices_per_worker = 1;  // --devices-per-proc under per-rank, else 1
  int first_local_rank = 0;    // the LOCAL_RANK of local worker 0 (srun's task, else 0)
  std::string sysfs_root = "/";
  std::set<int> usable;  // the CPUs gangrun may run on (host::usable_cpus())
};

// Each local worker's CPUs, in local-rank order. Usage errors (nothing has
// started): no accelerator (a CPU-only launch), a worker with no device of
// its own, a device without a PCI address, a topology that does not read
// (the file is named), a NUMA node without usable CPUs, too few cores for
// exclusive.
Expected<std::vector<std::vector<int>>> numa_worker_cpus(const NumaRequest& request,
                                                         const std::optional<NodeDevices>& devices,
                                                         int local_workers);

// "node", "socket", "exclusive", "core-complex".
const char* to_string(config::NumaBinding mode);

}  // namespace gangrun::launch
