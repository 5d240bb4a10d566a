// torchrun's NUMA binding (its --numa-binding, PyTorch 2.8+): which CPUs the
// worker of one accelerator is pinned to. The accelerator is the one torchrun
// gives the worker (its device index equal to the local rank); the CPUs are
// always restricted to the ones gangrun may run on (`usable`, its own
// affinity), as torchrun restricts them to its own.
//
//   node          every usable CPU of the accelerator's NUMA node.
//   socket        every usable CPU of the NUMA nodes on that node's socket
//                 (the socket of the node's lowest usable CPU).
//   exclusive     the node's usable physical cores (hyperthread siblings
//                 stay together), in order of their lowest CPU, shared out
//                 among the accelerators on that node in device order:
//                 cores / accelerators each, the first (cores % accelerators)
//                 one more. Fewer cores than accelerators is an error.
//   core-complex  one last-level cache domain of the node (its usable CPUs),
//                 largest first, then lowest CPU first; the node's i-th
//                 accelerator takes the (i mod domains)-th, so with more
//                 accelerators than domains some share one, as in torchrun.
//
// An empty result (a node with no usable CPU) is an error, as in torchrun.
// Errors are ErrorCode::usage, naming the node and the CPUs involved.
#pragma once

#include "placement/numa_topology.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <set>
#include <vector>

namespace gangrun::placement {

enum class NumaMode { node, socket, exclusive, core_complex };

// torchrun's spelling: "node", "socket", "exclusive", "core-complex".
const char* to_string(NumaMode mode);

// The CPUs, ascending, of the worker whose accelerator is `accelerator`, an
// index into `accelerator_nodes`: the NUMA node of every accelerator the
// node's workers index (NumaTopology::node_of_device), in device order.
Expected<std::vector<int>> numa_cpus(NumaMode mode, const NumaTopology& topology,
                                     const std::vector<int>& accelerator_nodes,
                                     std::size_t accelerator, const std::set<int>& usable);

}  // namespace gangrun::placement
