// --numa_binding in the plan (launch/numa_cpus.hpp): which accelerator each
// local worker's CPUs follow, and the launches it refuses, on the fake
// two-socket tree of numa_tree.hpp (GPUs 0-3 on node 0, 4-7 on node 1).
#include "launch/numa_cpus.hpp"
#include "numa_tree.hpp"

#include <catch2/catch.hpp>

namespace {

using Catch::Matchers::Contains;
using gangrun::config::NumaBinding;
using gangrun::launch::NodeDevices;
using gangrun::launch::numa_worker_cpus;
using gangrun::launch::NumaRequest;

NodeDevices eight_gpus() {
  NodeDevices devices;
  devices.kind = gangrun::accel::DeviceKind::cuda;
  for (int gpu = 0; gpu < 8; ++gpu) {
    gangrun::accel::Device device;
    device.index = gpu;
    device.pci = gangrun::test::gpu_address(gpu);
    devices.selected.push_back({.device = device, .token = std::to_string(gpu)});
  }
  return devices;
}

NumaRequest request(const gangrun::test::NumaTree& tree, NumaBinding mode, int per_worker = 1) {
  std::set<int> usable;
  for (int cpu = 0; cpu < 64; ++cpu) usable.insert(cpu);
  return {.mode = mode,
          .devices_per_worker = per_worker,
          .first_local_rank = 0,
          .sysfs_root = tree.path(),
          .usable = usable};
}

std::vector<int> span(int first, int last) {
  std::vector<int> cpus;
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  return cpus;
}

}  // namespace

TEST_CASE("numa plan: local rank i follows selected device i", "[launch][numa]") {
  gangrun::test::NumaTree tree;
  two_socket_eight_gpus(tree);
  auto cpus = numa_worker_cpus(request(tree, NumaBinding::exclusive), eight_gpus(), 2);
  REQUIRE(cpus);
  // exclusive: node 0's 16 cores over its 4 GPUs; local ranks 0 and 1 take
  // GPUs 0 and 1 (the other two GPUs of the node still count).
  std::vector<int> first = span(0, 3), second = span(4, 7);
  for (int cpu : span(32, 35)) first.push_back(cpu);
  for (int cpu : span(36, 39)) second.push_back(cpu);
  CHECK(*cpus == std::vector<std::vector<int>>{first, second});
}

TEST_CASE("numa plan: per-rank workers follow the first of their devices", "[launch][numa]") {
  gangrun::test::NumaTree tree;
  two_socket_eight_gpus(tree);
  // --devices-per-proc 4: local rank 1 has GPUs 4-7, on node 1.
  auto cpus = numa_worker_cpus(request(tree, NumaBinding::node, 4), eight_gpus(), 2);
  REQUIRE(cpus);
  std::vector<int> node1 = span(16, 31);
  for (int cpu : span(48, 63)) node1.push_back(cpu);
  CHECK((*cpus)[1] == node1);
}

TEST_CASE("numa plan: srun's task follows the device its SLURM_LOCALID indexes", "[launch][numa]") {
  gangrun::test::NumaTree tree;
  two_socket_eight_gpus(tree);
  // --worker-per-task: one worker, LOCAL_RANK 5, so GPU 5 on node 1; node 1's
  // 16 cores over GPUs 4-7 give GPU 5 (second there) cores 20-23.
  NumaRequest task = request(tree, NumaBinding::exclusive);
  task.first_local_rank = 5;
  auto cpus = numa_worker_cpus(task, eight_gpus(), 1);
  REQUIRE(cpus);
  CHECK(*cpus == std::vector<std::vector<int>>{{20, 21, 22, 23, 52, 53, 54, 55}});
}

TEST_CASE("numa plan: launches it cannot bind are usage errors", "[launch][numa]") {
  gangrun::test::NumaTree tree;
  two_socket_eight_gpus(tree);
  NodeDevices cpu_only;
  auto none = numa_worker_cpus(request(tree, NumaBinding::node), cpu_only, 1);
  REQUIRE_FALSE(none);
  CHECK(none.error().code() == gangrun::ErrorCode::usage);
  CHECK_THAT(none.error().message(),
             Contains("--numa_binding node: binds each worker to the CPUs near its accelerator, "
                      "and this launch has no accelerator"));
  CHECK_FALSE(numa_worker_cpus(request(tree, NumaBinding::node), std::nullopt, 1));

  auto too_many = numa_worker_cpus(request(tree, NumaBinding::socket), eight_gpus(), 9);
  REQUIRE_FALSE(too_many);
  CHECK_THAT(too_many.error().message(),
             Contains("--numa_binding socket: local rank 8 has no accelerator of its own"));

  NodeDevices no_pci = eight_gpus();
  no_pci.selected[0].device.pci.reset();
  auto unknown = numa_worker_cpus(request(tree, NumaBinding::node), no_pci, 1);
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message(), Contains("gives no PCI address for CUDA device 0"));

  tree.write("sys/bus/pci/devices/0000:ba:00.0/numa_node", "");
  auto empty = numa_worker_cpus(request(tree, NumaBinding::node), eight_gpus(), 1);
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.error().message(),
             Contains("--numa_binding node: the NUMA node of CUDA device 6: ") &&
                 Contains("0000:ba:00.0/numa_node holds '', not a number"));
}
