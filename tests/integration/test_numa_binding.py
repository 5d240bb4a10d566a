"""--numa_binding (docs/numa.md): each worker pinned to the CPUs near its GPU, as torchrun does.

The machine is scripted: eight GPUs from the fake libcuda.so.1 (test_devices.py's EIGHT, on
PCI buses 10-80) and a fake sysfs tree (GANGRUN_SYSFS_ROOT) of two sockets, one NUMA node
each, 16 physical cores of 2 threads per socket, one L3 per socket. Its CPUs are numbered
round-robin across the sockets, as some firmware does: even CPUs are socket 0, odd ones
socket 1, and CPU c's second thread is c + 32. GPUs 0-3 sit on node 0, 4-7 on node 1.

gangrun binds only to CPUs it may run on, like torchrun. The tests run gangrun with its
affinity set to CPUs 0 and 1 (one CPU of each node, which every test host has), so the
expected lists below are the hand-derived rules on that usable set: node 0's usable CPUs
are {0}, node 1's {1}. A real launch then checks that each worker runs where it was planned.
"""

import json
import os

import harness
from harness import TEST_PYTHON
from test_devices import EIGHT, DeviceTestCase

USABLE = {0, 1}
NODE0 = [c for c in range(64) if c % 2 == 0]
NODE1 = [c for c in range(64) if c % 2 == 1]
MODES = ("node", "socket", "exclusive", "core-complex")


def ranges(cpus):
    """[0, 2, 4] -> "0,2,4"; [0, 1, 2] -> "0-2" (sysfs's cpulist form)."""
    cpus, parts, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


class NumaBinding(DeviceTestCase):
    def setUp(self):
        super().setUp()
        self.saved_affinity = os.sched_getaffinity(0)
        if not USABLE <= self.saved_affinity:
            self.skipTest(f"CPUs 0 and 1 are not both usable here ({sorted(self.saved_affinity)})")
        # gangrun inherits it: the usable set the expectations are written for.
        os.sched_setaffinity(0, USABLE)
        self.addCleanup(os.sched_setaffinity, 0, self.saved_affinity)

    def write(self, root, relative, text):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")

    def tree(self, skip=()):
        """The two-socket machine's sysfs under a fresh root, less the files in SKIP."""
        root = self.path(f"sysfs{len(os.listdir(self.tmp))}")
        files = {"sys/devices/system/node/node0/cpulist": ranges(NODE0),
                 "sys/devices/system/node/node1/cpulist": ranges(NODE1)}
        for cpu in range(64):
            socket, core = cpu % 2, cpu % 32
            base = f"sys/devices/system/cpu/cpu{cpu}"
            files[f"{base}/topology/physical_package_id"] = str(socket)
            files[f"{base}/topology/thread_siblings_list"] = f"{core},{core + 32}"
            for index, (kind, level, shared) in enumerate(
                    [("Data", 1, f"{core},{core + 32}"), ("Instruction", 1, f"{core},{core + 32}"),
                     ("Unified", 2, f"{core},{core + 32}"),
                     ("Unified", 3, ranges(NODE0 if socket == 0 else NODE1))]):
                files[f"{base}/cache/index{index}/type"] = kind
                files[f"{base}/cache/index{index}/level"] = str(level)
                files[f"{base}/cache/index{index}/shared_cpu_list"] = shared
        for gpu, entry in enumerate(EIGHT):
            files[f"sys/bus/pci/devices/{entry['pci']}/numa_node"] = "0" if gpu < 4 else "1"
        for relative, text in files.items():
            if relative not in skip:
                self.write(root, relative, text)
        return root

    def planned_cpus(self, options, env):
        result = self.gangrun(["--dry-run", "--json", *options, *self.fake("--exit", 0)], env=env,
                              timeout=30)
        self.assertExit(result, 0)
        return [w["cpus"] for w in sorted(json.loads(result.stdout)["workers"],
                                          key=lambda w: w["local_rank"])]

    # ---- the plan, mode by mode

    def test_dry_run_shows_each_workers_cpus_in_every_mode(self):
        env = self.env(cuda=EIGHT, sysfs=self.tree())
        on_node = [[0]] * 4 + [[1]] * 4  # the GPU's node's usable CPUs
        # node: the node's CPUs; socket: the nodes of its socket (one here); core-complex:
        # node i's one L3 domain, taken by each of its 4 GPUs (GPU i takes domain i mod 1).
        for mode in ("node", "socket", "core-complex"):
            with self.subTest(mode=mode):
                self.assertEqual(self.planned_cpus(["--nproc_per_node", 8, "--numa_binding", mode],
                                                   env), on_node)
        # exclusive: one usable physical core per node for its four GPUs is too few.
        result = self.expect_exit(["--nproc_per_node", 8, "--numa-binding", "exclusive",
                                   *self.fake("--exit", 0)], env, 2)
        self.assertIn("NUMA node 0 has 1 physical cores gangrun may run on but 4 accelerators",
                      result.stderr)
        self.assert_nothing_started()
        # With GPUs 0 and 4 visible, each node has one GPU, which takes the node's one core.
        two = self.env(cuda=EIGHT, sysfs=self.tree(), CUDA_VISIBLE_DEVICES="0,4")
        for mode in MODES:
            with self.subTest(mode=mode, visible="0,4"):
                self.assertEqual(self.planned_cpus(["--nproc_per_node", 2, "--numa_binding", mode],
                                                   two), [[0], [1]])
        text = self.expect_exit(["--dry-run", "--nproc_per_node", 2, "--numa_binding", "socket",
                                 *self.fake("--exit", 0)], two, 0).stdout
        self.assertIn("cpus:    0 (--numa_binding socket)", text)
        self.assertIn("cpus:    1 (--numa_binding socket)", text)

    # ---- a real launch

    def test_each_worker_runs_on_the_cpus_planned(self):
        env = self.env(cuda=EIGHT, sysfs=self.tree(), CUDA_VISIBLE_DEVICES="0,4")
        options = ["--nproc_per_node", 2, "--numa_binding", "exclusive"]
        planned = self.planned_cpus(options, env)
        out = self.path("affinity")
        os.mkdir(out)
        script = ("import os, sys; open(os.path.join(sys.argv[1], os.environ['LOCAL_RANK']), 'w')"
                  ".write(','.join(map(str, sorted(os.sched_getaffinity(0)))))")
        result = self.gangrun([*options, "--no_python", TEST_PYTHON, "-B", "-c", script, out],
                              env=env)
        self.assertExit(result, 0)
        seen = []
        for rank in range(2):
            with open(os.path.join(out, str(rank))) as f:
                seen.append([int(c) for c in f.read().split(",")])
        self.assertEqual(seen, planned)
        self.assertEqual(seen, [[0], [1]])
        # torchrun's binding leaves OMP_NUM_THREADS to its own rule: 1 for two workers.
        self.assertNotIn("core share", result.stderr)

    # ---- what it refuses, before anything starts

    def test_refusals_name_the_problem_and_start_nothing(self):
        tree = self.tree()
        cases = [
            (["--numa_binding", "l3"], self.env(cuda=EIGHT, sysfs=tree),
             "is not a binding mode (expected node, socket, exclusive or core-complex)"),
            (["--numa_binding", "node", "--bind_cores_to_rank"], self.env(cuda=EIGHT, sysfs=tree),
             "both decide which CPUs each worker runs on"),
            (["--numa_binding", "node"], self.env(sysfs=tree),
             "this launch has no accelerator; leave --numa_binding out on a CPU-only launch"),
            (["--numa_binding", "node", "--nproc_per_node", 2],
             self.env(cuda=EIGHT, sysfs=self.tree(skip={f"sys/bus/pci/devices/{EIGHT[1]['pci']}"
                                                         "/numa_node"})),
             f"{EIGHT[1]['pci']}/numa_node does not exist"),
            (["--numa_binding", "socket", "--nproc_per_node", 2],
             self.env(cuda=EIGHT, sysfs=self.tree(skip={"sys/devices/system/node/node0/cpulist"})),
             "node0/cpulist does not exist"),
            (["--numa_binding", "core-complex", "--nproc_per_node", 1],
             self.env(cuda=EIGHT, sysfs=self.tree(
                 skip={f"sys/devices/system/cpu/cpu0/cache/index{i}/{f}" for i in range(4)
                       for f in ("type", "level", "shared_cpu_list")})),
             "cpu0/cache lists no data cache"),
        ]
        for options, env, message in cases:
            with self.subTest(options=options):
                for dry in ([], ["--dry-run"]):
                    result = self.expect_exit([*dry, *options, *self.fake("--exit", 0)], env, 2)
                    self.assertIn(message, result.stderr)
        self.assert_nothing_started()


if __name__ == "__main__":
    harness.main()
