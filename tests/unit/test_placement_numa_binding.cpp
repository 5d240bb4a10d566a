// --numa_binding's rules (placement/numa_binding.hpp) on fake sysfs trees
// (numa_tree.hpp). Every expected list was worked out by hand from
// torchrun's rules, written in the comment beside it, and is compared in
// sysfs's range form ("0-3,32-35").
#include "numa_tree.hpp"
#include "placement/numa_binding.hpp"
#include "placement/numa_topology.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using gangrun::placement::NumaMode;
using gangrun::placement::NumaTopology;
using gangrun::test::NumaTree;

// {0,1,2,3,32,33} -> "0-3,32-33".
std::string ranges(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[i]);
    if (j > i) text += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

std::set<int> all_cpus(int count) {
  std::set<int> cpus;
  for (int cpu = 0; cpu < count; ++cpu) cpus.insert(cpu);
  return cpus;
}

// The NUMA node of each of the tree's first `gpus` GPUs, read as gangrun reads them.
std::vector<int> gpu_nodes(const NumaTopology& topology, int gpus) {
  std::vector<int> nodes;
  for (int gpu = 0; gpu < gpus; ++gpu) {
    auto node = topology.node_of_device(gangrun::test::gpu_address(gpu));
    REQUIRE(node);
    nodes.push_back(*node);
  }
  return nodes;
}

// Every GPU's binding in one mode, in range form.
std::vector<std::string> bindings(const NumaTree& tree, NumaMode mode, int gpus,
                                  const std::set<int>& usable) {
  NumaTopology topology(tree.path());
  std::vector<int> nodes = gpu_nodes(topology, gpus);
  std::vector<std::string> each;
  for (int gpu = 0; gpu < gpus; ++gpu) {
    auto cpus = gangrun::placement::numa_cpus(mode, topology, nodes, gpu, usable);
    if (!cpus) FAIL(cpus.error().message());
    each.push_back(ranges(*cpus));
  }
  return each;
}

std::string binding_error(const NumaTree& tree, NumaMode mode, int gpus,
                          const std::set<int>& usable, int gpu = 0) {
  NumaTopology topology(tree.path());
  std::vector<int> nodes = gpu_nodes(topology, gpus);
  auto cpus = gangrun::placement::numa_cpus(mode, topology, nodes, gpu, usable);
  REQUIRE_FALSE(cpus);
  CHECK(cpus.error().code() == gangrun::ErrorCode::usage);
  return cpus.error().message();
}

}  // namespace

TEST_CASE("numa: sysfs CPU lists read as the kernel writes them", "[placement][numa]") {
  using gangrun::placement::parse_cpu_list;
  CHECK(*parse_cpu_list("0-3,8,10-11\n") == std::set<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("\n")->empty());
  CHECK_FALSE(parse_cpu_list("0-x"));
  CHECK_FALSE(parse_cpu_list("3-1"));
  CHECK(gangrun::placement::pci_text({.domain = 0, .bus = 0x1a, .device = 0, .function = 0}) ==
        "0000:1a:00.0");
}

TEST_CASE("numa: two sockets, eight GPUs, every mode", "[placement][numa]") {
  NumaTree tree;
  two_socket_eight_gpus(tree);
  const std::set<int> usable = all_cpus(64);

  // node: every CPU of the GPU's NUMA node (GPUs 0-3 on node 0, 4-7 on node 1).
  std::vector<std::string> node0(4, "0-15,32-47");
  std::vector<std::string> node1(4, "16-31,48-63");
  std::vector<std::string> by_node = node0;
  by_node.insert(by_node.end(), node1.begin(), node1.end());
  CHECK(bindings(tree, NumaMode::node, 8, usable) == by_node);

  // socket: every CPU of the nodes on the node's socket; one node per socket: as node.
  CHECK(bindings(tree, NumaMode::socket, 8, usable) == by_node);

  // exclusive: each node's 16 physical cores shared out among its 4 GPUs, 4
  // cores each, in core order, both threads of a core together.
  CHECK(bindings(tree, NumaMode::exclusive, 8, usable) ==
        std::vector<std::string>{"0-3,32-35", "4-7,36-39", "8-11,40-43", "12-15,44-47",
                                 "16-19,48-51", "20-23,52-55", "24-27,56-59", "28-31,60-63"});

  // core-complex: one L3 per node, so the node's 4 GPUs all take that one
  // domain (GPU i takes domain i mod 1), as torchrun does.
  CHECK(bindings(tree, NumaMode::core_complex, 8, usable) == by_node);
}

TEST_CASE("numa: only the CPUs gangrun may run on are shared out", "[placement][numa]") {
  NumaTree tree;
  two_socket_eight_gpus(tree);
  // Core 0 (CPUs 0 and 32) is outside gangrun's affinity.
  std::set<int> usable = all_cpus(64);
  usable.erase(0);
  usable.erase(32);

  // node: node 0's CPUs less 0 and 32.
  CHECK(bindings(tree, NumaMode::node, 1, usable) == std::vector<std::string>{"1-15,33-47"});
  // exclusive: node 0 has 15 usable cores for 4 GPUs: 15 / 4 = 3 each, and
  // the first 15 % 4 = 3 GPUs one more: cores 1-4, 5-8, 9-12, then 13-15.
  CHECK(bindings(tree, NumaMode::exclusive, 4, usable) ==
        std::vector<std::string>{"1-4,33-36", "5-8,37-40", "9-12,41-44", "13-15,45-47"});
  // socket: node 1 stays whole.
  CHECK(bindings(tree, NumaMode::socket, 8, usable)[7] == "16-31,48-63");
}

TEST_CASE("numa: one socket of four core complexes, every mode", "[placement][numa]") {
  NumaTree tree;
  one_socket_four_complexes(tree);
  const std::set<int> usable = all_cpus(64);

  // node: numa_node -1 is node 0 (torchrun's reading), which holds every CPU.
  std::vector<std::string> whole(4, "0-63");
  CHECK(bindings(tree, NumaMode::node, 4, usable) == whole);
  // socket: the one socket's one node.
  CHECK(bindings(tree, NumaMode::socket, 4, usable) == whole);
  // exclusive: 32 cores / 4 GPUs = 8 cores each, in core order.
  std::vector<std::string> by_complex{"0-7,32-39", "8-15,40-47", "16-23,48-55", "24-31,56-63"};
  CHECK(bindings(tree, NumaMode::exclusive, 4, usable) == by_complex);
  // core-complex: all domains equal, so by lowest CPU; GPU i takes complex i.
  CHECK(bindings(tree, NumaMode::core_complex, 4, usable) == by_complex);
}

TEST_CASE("numa: core complexes are taken fullest first, and shared when GPUs outnumber them",
          "[placement][numa]") {
  NumaTree tree;
  one_socket_four_complexes(tree);
  std::set<int> usable = all_cpus(64);
  usable.erase(0);
  usable.erase(32);
  // core-complex: complex 0 has 14 usable CPUs, the others 16; fullest
  // first, then lowest CPU: complexes 1, 2, 3, then what is left of 0.
  CHECK(bindings(tree, NumaMode::core_complex, 4, usable) ==
        std::vector<std::string>{"8-15,40-47", "16-23,48-55", "24-31,56-63", "1-7,33-39"});
  // exclusive: 31 usable cores / 4 = 7 each, the first 31 % 4 = 3 GPUs one
  // more: cores 1-8, 9-16, 17-24, 25-31.
  CHECK(bindings(tree, NumaMode::exclusive, 4, usable) ==
        std::vector<std::string>{"1-8,33-40", "9-16,41-48", "17-24,49-56", "25-31,57-63"});

  // Eight GPUs on the node's four complexes: GPU i takes complex i mod 4.
  NumaTopology topology(tree.path());
  std::vector<int> eight_on_node0(8, 0);
  auto fifth = gangrun::placement::numa_cpus(NumaMode::core_complex, topology, eight_on_node0, 5,
                                             all_cpus(64));
  REQUIRE(fifth);
  CHECK(ranges(*fifth) == "8-15,40-47");
}

TEST_CASE("numa: a topology with holes is named, file by file", "[placement][numa]") {
  const std::set<int> usable = all_cpus(64);
  SECTION("a NUMA node without its cpulist") {
    NumaTree tree;
    two_socket_eight_gpus(tree);
    tree.remove("sys/devices/system/node/node1/cpulist");
    tree.node_without_cpulist(1);
    CHECK_THAT(binding_error(tree, NumaMode::node, 8, usable, 4),
               Contains("node1/cpulist does not exist") && Contains("leave --numa_binding out"));
  }
  SECTION("a GPU without numa_node") {
    NumaTree tree;
    two_socket_eight_gpus(tree);
    tree.remove("sys/bus/pci/devices/0000:2a:00.0/numa_node");
    NumaTopology topology(tree.path());
    auto node = topology.node_of_device(gangrun::test::gpu_address(1));
    REQUIRE_FALSE(node);
    CHECK_THAT(node.error().message(),
               Contains("sys/bus/pci/devices/0000:2a:00.0/numa_node does not exist"));
  }
  SECTION("a numa_node that is no number") {
    NumaTree tree;
    tree.device("0000:18:00.0", "near");
    auto node = NumaTopology(tree.path()).node_of_device(gangrun::test::gpu_address(0));
    REQUIRE_FALSE(node);
    CHECK_THAT(node.error().message(), Contains("holds 'near', not a number"));
  }
  SECTION("a CPU without its topology") {
    NumaTree tree;
    two_socket_eight_gpus(tree);
    tree.remove("sys/devices/system/cpu/cpu5");
    CHECK_THAT(binding_error(tree, NumaMode::exclusive, 8, usable),
               Contains("cpu5/topology/thread_siblings_list does not exist"));
    tree.remove("sys/devices/system/cpu/cpu16/topology/physical_package_id");
    CHECK_THAT(binding_error(tree, NumaMode::socket, 8, usable),
               Contains("cpu16/topology/physical_package_id does not exist"));
    // node mode reads no CPU directory.
    CHECK(bindings(tree, NumaMode::node, 1, usable) == std::vector<std::string>{"0-15,32-47"});
  }
  SECTION("no cache information, for core-complex") {
    NumaTree tree;
    tree.node(0, "0-1");
    tree.cpu({.cpu = 0, .socket = 0, .siblings = "0", .l3 = ""});
    tree.cpu({.cpu = 1, .socket = 0, .siblings = "1", .l3 = ""});
    tree.device(gangrun::test::gpu_pci(0), "0");
    CHECK_THAT(binding_error(tree, NumaMode::core_complex, 1, {0, 1}),
               Contains("cpu0/cache lists no data cache"));
    // exclusive needs no cache.
    CHECK(bindings(tree, NumaMode::exclusive, 1, {0, 1}) == std::vector<std::string>{"0-1"});
  }
  SECTION("more GPUs than physical cores, for exclusive") {
    NumaTree tree;
    two_socket_eight_gpus(tree);
    CHECK_THAT(binding_error(tree, NumaMode::exclusive, 8, {0, 32, 16, 48}),
               Contains("NUMA node 0 has 1 physical cores gangrun may run on but 4 accelerators"));
  }
  SECTION("a NUMA node with no CPU gangrun may run on") {
    NumaTree tree;
    two_socket_eight_gpus(tree);
    CHECK_THAT(binding_error(tree, NumaMode::node, 8, {16, 17}),
               Contains("NUMA node 0 has no CPU gangrun may run on"));
  }
}
