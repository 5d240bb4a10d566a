#include "placement/numa_binding.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

namespace gangrun::placement {
namespace {

std::vector<int> sorted(const std::set<int>& cpus) { return {cpus.begin(), cpus.end()}; }

// The CPUs of a NUMA node gangrun may run on; empty when none is.
Expected<std::set<int>> usable_cpus_of_node(const NumaTopology& topology, int node,
                                            const std::set<int>& usable) {
  GANGRUN_TRY_ASSIGN(all, topology.node_cpus(node));
  std::set<int> both;
  std::set_intersection(all->begin(), all->end(), usable.begin(), usable.end(),
                        std::inserter(both, both.end()));
  return both;
}

Expected<std::set<int>> nonempty_usable_cpus_of_node(const NumaTopology& topology, int node,
                                                     const std::set<int>& usable) {
  GANGRUN_TRY_ASSIGN(cpus, usable_cpus_of_node(topology, node, usable));
  if (cpus->empty()) {
    GANGRUN_TRY_ASSIGN(all, topology.node_cpus(node));
    return fail_usage("NUMA node " + std::to_string(node) +
                      " has no CPU gangrun may run on (the node's CPUs: " +
                      (all->empty() ? "none" : strings::join_numbers(sorted(*all), ",")) +
                      "; gangrun's: " + strings::join_numbers(sorted(usable), ",") +
                      "); run gangrun with an affinity that includes them, or leave "
                      "--numa_binding out");
  }
  return *cpus;
}

// The usable CPUs of a node grouped by a key of each CPU (its core, its
// cache), the key being the group's lowest CPU as the topology lists it.
template <typename GroupOf>
Expected<std::map<int, std::set<int>>> group_cpus(const std::set<int>& cpus, GroupOf group_of) {
  std::map<int, std::set<int>> groups;
  for (int cpu : cpus) {
    GANGRUN_TRY_ASSIGN(group, group_of(cpu));
    groups[*group->begin()].insert(cpu);
  }
  return groups;
}

// The accelerators on the same node as `accelerator`, in device order, and
// its place among them.
struct NodePeers {
  std::size_t count = 0;
  std::size_t position = 0;
};
NodePeers peers_on_node(const std::vector<int>& accelerator_nodes, std::size_t accelerator) {
  NodePeers peers;
  for (std::size_t i = 0; i < accelerator_nodes.size(); ++i) {
    if (accelerator_nodes[i] != accelerator_nodes[accelerator]) continue;
    if (i < accelerator) ++peers.position;
    ++peers.count;
  }
  return peers;
}

Expected<std::set<int>> socket_cpus(const NumaTopology& topology, int node,
                                    const std::set<int>& usable) {
  GANGRUN_TRY_ASSIGN(own, nonempty_usable_cpus_of_node(topology, node, usable));
  GANGRUN_TRY_ASSIGN(socket, topology.socket_of(*own->begin()));
  GANGRUN_TRY_ASSIGN(nodes, topology.nodes());
  std::set<int> cpus;
  for (int other : *nodes) {
    GANGRUN_TRY_ASSIGN(theirs, usable_cpus_of_node(topology, other, usable));
    // A node with no usable CPU (memory only, or outside gangrun's
    // affinity) belongs to no socket here.
    if (theirs->empty()) continue;
    GANGRUN_TRY_ASSIGN(their_socket, topology.socket_of(*theirs->begin()));
    if (*their_socket == *socket) cpus.insert(theirs->begin(), theirs->end());
  }
  return cpus;
}

Expected<std::set<int>> exclusive_cpus(const NumaTopology& topology, int node,
                                       const std::set<int>& usable, NodePeers peers) {
  GANGRUN_TRY_ASSIGN(own, nonempty_usable_cpus_of_node(topology, node, usable));
  GANGRUN_TRY_ASSIGN(cores, group_cpus(*own, [&](int cpu) { return topology.core_of(cpu); }));
  const std::size_t per_accelerator = cores->size() / peers.count;
  const std::size_t with_one_more = cores->size() % peers.count;
  if (per_accelerator == 0) {
    return fail_usage("NUMA node " + std::to_string(node) + " has " +
                      std::to_string(cores->size()) + " physical cores gangrun may run on but " +
                      std::to_string(peers.count) +
                      " accelerators; --numa_binding exclusive gives each at least one core: use "
                      "--numa_binding node, or fewer accelerators");
  }
  const std::size_t first =
      peers.position * per_accelerator + std::min(peers.position, with_one_more);
  const std::size_t count = per_accelerator + (peers.position < with_one_more ? 1 : 0);
  std::set<int> cpus;
  auto core = std::next(cores->begin(), static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = 0; i < count; ++i, ++core)
    cpus.insert(core->second.begin(), core->second.end());
  return cpus;
}

Expected<std::set<int>> core_complex_cpus(const NumaTopology& topology, int node,
                                          const std::set<int>& usable, NodePeers peers) {
  GANGRUN_TRY_ASSIGN(own, nonempty_usable_cpus_of_node(topology, node, usable));
  GANGRUN_TRY_ASSIGN(caches,
                     group_cpus(*own, [&](int cpu) { return topology.last_level_cache_of(cpu); }));
  std::vector<std::pair<int, std::set<int>>> domains(caches->begin(), caches->end());
  // The fullest domains first (a domain partly outside gangrun's affinity
  // last), then by their lowest CPU.
  std::stable_sort(domains.begin(), domains.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return domains[peers.position % domains.size()].second;
}

}  // namespace

const char* to_string(NumaMode mode) {
  switch (mode) {
    case NumaMode::node:
      return "node";
    case NumaMode::socket:
      return "socket";
    case NumaMode::exclusive:
      return "exclusive";
    case NumaMode::core_complex:
      return "core-complex";
  }
  return "?";
}

Expected<std::vector<int>> numa_cpus(NumaMode mode, const NumaTopology& topology,
                                     const std::vector<int>& accelerator_nodes,
                                     std::size_t accelerator, const std::set<int>& usable) {
  const int node = accelerator_nodes.at(accelerator);
  const NodePeers peers = peers_on_node(accelerator_nodes, accelerator);
  Expected<std::set<int>> cpus = std::set<int>();
  switch (mode) {
    case NumaMode::node:
      cpus = nonempty_usable_cpus_of_node(topology, node, usable);
      break;
    case NumaMode::socket:
      cpus = socket_cpus(topology, node, usable);
      break;
    case NumaMode::exclusive:
      cpus = exclusive_cpus(topology, node, usable, peers);
      break;
    case NumaMode::core_complex:
      cpus = core_complex_cpus(topology, node, usable, peers);
      break;
  }
  if (!cpus) return tl::unexpected(cpus.error());
  return sorted(*cpus);
}

}  // namespace gangrun::placement
