#include "launch/numa_cpus.hpp"

#include "placement/numa_binding.hpp"
#include "placement/numa_topology.hpp"

#include <fmt/format.h>

namespace gangrun::launch {
namespace {

placement::NumaMode numa_mode(config::NumaBinding mode) {
  switch (mode) {
    case config::NumaBinding::node:
      return placement::NumaMode::node;
    case config::NumaBinding::socket:
      return placement::NumaMode::socket;
    case config::NumaBinding::exclusive:
      return placement::NumaMode::exclusive;
    case config::NumaBinding::core_complex:
      return placement::NumaMode::core_complex;
  }
  return placement::NumaMode::node;
}

// The NUMA node of every selected device, in selection order.
Expected<std::vector<int>> device_nodes(const std::string& flag, const NodeDevices& devices,
                                        const placement::NumaTopology& topology) {
  std::vector<int> nodes;
  for (const placement::Candidate& candidate : devices.selected) {
    if (!candidate.device.pci) {
      return fail_usage(fmt::format(
          "{}: the driver gives no PCI address for {} device {}, so its NUMA node is unknown; "
          "leave {} out",
          flag, accel::display_name(devices.kind), candidate.token, flag));
    }
    auto node = topology.node_of_device(*candidate.device.pci);
    if (!node) {
      return fail_usage(fmt::format("{}: the NUMA node of {} device {}: {}", flag,
                                    accel::display_name(devices.kind), candidate.token,
                                    node.error().message()));
    }
    nodes.push_back(*node);
  }
  return nodes;
}

}  // namespace

const char* to_string(config::NumaBinding mode) { return placement::to_string(numa_mode(mode)); }

Expected<std::vector<std::vector<int>>> numa_worker_cpus(const NumaRequest& request,
                                                         const std::optional<NodeDevices>& devices,
                                                         int local_workers) {
  const std::string flag = std::string("--numa_binding ") + to_string(request.mode);
  if (!devices || devices->kind == accel::DeviceKind::cpu || devices->selected.empty()) {
    return fail_usage(flag +
                      ": binds each worker to the CPUs near its accelerator, and this launch has "
                      "no accelerator; leave --numa_binding out on a CPU-only launch");
  }
  placement::NumaTopology topology(request.sysfs_root);
  GANGRUN_TRY_ASSIGN(nodes, device_nodes(flag, *devices, topology));
  std::vector<std::vector<int>> cpus;
  for (int worker = 0; worker < local_workers; ++worker) {
    const int local_rank = request.first_local_rank + worker;
    const auto device =
        static_cast<std::size_t>(local_rank) * static_cast<std::size_t>(request.devices_per_worker);
    if (device >= nodes->size()) {
      return fail_usage(fmt::format(
          "{}: local rank {} has no accelerator of its own ({} are selected for {} workers); "
          "start at most one worker per accelerator",
          flag, local_rank, nodes->size(), local_workers));
    }
    auto bound =
        placement::numa_cpus(numa_mode(request.mode), topology, *nodes, device, request.usable);
    if (!bound) {
      return fail_usage(fmt::format("{}: local rank {} (device {}, on NUMA node {}): {}", flag,
                                    local_rank, devices->selected[device].token, (*nodes)[device],
                                    bound.error().message()));
    }
    cpus.push_back(std::move(*bound));
  }
  return cpus;
}

}  // namespace gangrun::launch
