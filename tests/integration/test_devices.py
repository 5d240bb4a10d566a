"""Accelerators and visibility masks (docs/devices.md, "Accelerators").

Each worker is device_worker.py, a real program that asks its own vendor runtime (the fake
libcuda.so.1 or the fake libze_loader.so.1, through ctypes) which devices it sees, so the
tests check more than the variables gangrun wrote: that the worker's runtime resolves its
mask to the intended physical device (compared by UUID against the scripted machine).
Machines are scripted as JSON in the test's private directory; AMD GPUs come from a fake
KFD sysfs tree (GANGRUN_SYSFS_ROOT). Gaudi, Ascend and Neuron are not enumerated: gangrun
splits the list their variable holds.

ctest always sets FAKE_CUDA_LIBRARY and FAKE_ZE_LIBRARY (tests/CMakeLists.txt), so a test
that needs one fails, rather than skips, when it is missing. Only the real-GPU test skips,
when there is no NVIDIA GPU with a CUDA-enabled torch.
"""

import ctypes
import hashlib
import json
import os
import re
import subprocess
import sys

import harness
from harness import GangrunTestCase, TEST_PYTHON, option_named

WORKER = os.path.join(harness.HERE, "device_worker.py")
FAKE_CUDA = os.environ.get("FAKE_CUDA_LIBRARY")
FAKE_ZE = os.environ.get("FAKE_ZE_LIBRARY")
DEBIAN_LIBZE = "/usr/lib/x86_64-linux-gnu/libze_loader.so.1"

# What a test environment must not inherit from the shell that runs it.
_DEVICE_VARIABLES = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL", "HABANA_VISIBLE_MODULES", "HABANA_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES", "ONEAPI_DEVICE_SELECTOR",
    "FAKE_CUDA_MACHINE", "FAKE_CUDA_FAIL_INIT", "FAKE_CUDA_HANG_INIT", "FAKE_ZE_MACHINE",
    "FAKE_ZE_FAIL_INIT",
}


def uuid_of(seed):
    """A stable, realistic 8-4-4-4-12 UUID body (lower-case hex) named by SEED."""
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def gpu(seed, pci, *, name="NVIDIA H100 80GB HBM3", cc="9.0", sms=132, speed_rank=0, mig=(),
        uuid=None):
    """One GPU of a FAKE_CUDA_MACHINE (tests/helpers/fake_cuda.cpp), and its UUID."""
    entry = {"name": name, "uuid": uuid or uuid_of(seed), "pci": pci, "memory": 85899345920,
             "cc": cc, "sms": sms, "speed_rank": speed_rank}
    if mig:
        entry["mig"] = [{"uuid": uuid_of(m), "profile": "3g.40gb", "memory": 42949672960, "sms": 60}
                        for m in mig]
    return entry


def gpu_uuid(entry):
    return "GPU-" + entry["uuid"]


def mig_uuid(seed):
    return "MIG-" + uuid_of(seed)


# Four identical GPUs; 0 and 1 share the UUID prefix GPU-8932f937 (NVIDIA's example of a prefix).
FOUR = [
    gpu("g0", "0000:1a:00.0", uuid="8932f937-d72c-4106-c12f-20bd9faed9f6"),
    gpu("g1", "0000:3d:00.0", uuid="8932f937-5b0e-4a3d-9a61-7c4f2b1e0a11"),
    gpu("g2", "0000:5e:00.0"),
    gpu("g3", "0000:8a:00.0"),
]
EIGHT = [gpu(f"e{i}", f"0000:{0x10 * (i + 1):02x}:00.0") for i in range(8)]
# Two A100 on the lower PCI buses, two faster H100 above them: PCI_BUS_ID order starts with
# an A100, FASTEST_FIRST (the default) with an H100. Listed out of both orders on purpose.
MIXED = [
    gpu("h100-b", "0000:8a:00.0", speed_rank=0),
    gpu("a100-a", "0000:1a:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108, speed_rank=1),
    gpu("h100-a", "0000:5e:00.0", speed_rank=0),
    gpu("a100-b", "0000:3d:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108, speed_rank=1),
]
MIXED_PCI_ORDER = [MIXED[1], MIXED[3], MIXED[2], MIXED[0]]
MIXED_FASTEST_ORDER = [MIXED[2], MIXED[0], MIXED[1], MIXED[3]]


def ze_card(seed, pci, tiles=2):
    """A card of a FAKE_ZE_MACHINE (tests/helpers/fake_ze.cpp) with TILES tiles."""
    body = lambda s: hashlib.sha256(s.encode()).hexdigest()[:32]  # noqa: E731
    card = {"name": "Intel(R) Data Center GPU Max 1550", "uuid": body(seed), "pci": pci,
            "memory": 137438953472, "eus": 1024}
    if tiles > 1:
        card["tiles"] = [{"uuid": body(f"{seed}.{t}"), "memory": 68719476736, "eus": 512}
                         for t in range(tiles)]
    return card


# Two cards of two tiles, written in reverse PCI order: the driver sorts them.
ZE_CARD0 = ze_card("card0", "0000:3a:00.0")
ZE_CARD1 = ze_card("card1", "0000:9a:00.0")
ZE_MACHINE = {"driver_version": "1.3.29735", "default_hierarchy": "FLAT",
              "cards": [ZE_CARD1, ZE_CARD0]}
# The leaves under FLAT, card-major in driver order: what a flat index names.
ZE_LEAVES = [t["uuid"] for t in ZE_CARD0["tiles"] + ZE_CARD1["tiles"]]


class DeviceTestCase(GangrunTestCase):
    """Environments with scripted machines, launches of device_worker.py, refusal checks."""

    def require_fake_cuda(self):
        if not FAKE_CUDA or not os.path.isfile(FAKE_CUDA):
            self.fail(f"FAKE_CUDA_LIBRARY is not a file ({FAKE_CUDA!r}); ctest always sets it "
                      "(tests/CMakeLists.txt): build the fake_cuda target")

    def require_fake_ze(self):
        if not FAKE_ZE or not os.path.isfile(FAKE_ZE):
            self.fail(f"FAKE_ZE_LIBRARY is not a file ({FAKE_ZE!r}); ctest always sets it "
                      "(tests/CMakeLists.txt): build the fake_ze target")

    def write_json(self, name, doc):
        path = self.path(name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def env(self, *, cuda=None, ze=None, sysfs=None, **variables):
        """gangrun's environment: the fake driver with machine CUDA (a list of gpu()
        entries) or no libcuda at all, the fake Level Zero loader with machine ZE or none,
        the KFD tree under SYSFS or an empty root, plus VARIABLES (None: unset)."""
        env = {k: v for k, v in harness.clean_env().items()
               if k not in _DEVICE_VARIABLES and not k.startswith("ZE_")}
        if cuda is not None:
            self.require_fake_cuda()
            env["GANGRUN_CUDA_LIBRARY"] = FAKE_CUDA
            env["FAKE_CUDA_MACHINE"] = self.write_json("cuda_machine.json",
                                                       {"driver_version": 12060, "gpus": cuda})
        else:
            env["GANGRUN_CUDA_LIBRARY"] = self.path("absent", "libcuda.so.1")
        if ze is not None:
            self.require_fake_ze()
            env["GANGRUN_LEVEL_ZERO_LIBRARY"] = FAKE_ZE
            env["FAKE_ZE_MACHINE"] = self.write_json("ze_machine.json", ze)
        else:
            env["GANGRUN_LEVEL_ZERO_LIBRARY"] = self.path("absent", "libze_loader.so.1")
        if sysfs is None:
            sysfs = self.path("empty-root")
            os.makedirs(sysfs, exist_ok=True)
        env["GANGRUN_SYSFS_ROOT"] = sysfs
        for name, value in variables.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
        return env

    # ---- launching real workers

    def launch(self, options, env, workers, runtimes=("--cuda",), timeout=2 * harness.EVENT_TIMEOUT):
        """gangrun OPTIONS device_worker.py; returns (result, [report per rank])."""
        out = self.path(f"out{len(self._started)}")
        os.mkdir(out)
        result = self.gangrun([*options, "--no_python", TEST_PYTHON, "-B", WORKER, out, *runtimes],
                              env=env, timeout=timeout)
        self.assertExit(result, 0)
        names = sorted(os.listdir(out))
        self.assertEqual(names, [f"rank.{r}.json" for r in range(workers)],
                         f"expected {workers} worker reports" + result.describe())
        reports = [self.read_json(os.path.join(out, n)) for n in names]
        for rank, report in enumerate(reports):
            for runtime in ("cuda", "ze"):
                if runtime in report:
                    self.assertIsNone(report[runtime]["error"], f"rank {rank}'s {runtime} runtime"
                                      + result.describe())
        return result, sorted(reports, key=lambda r: r["rank"])

    def assert_cuda_views(self, reports, masks, uuids, where=""):
        """Worker i got CUDA_VISIBLE_DEVICES == masks[i] (None: not set) and its driver shows
        exactly uuids[i], in that order."""
        self.assertEqual(len(reports), len(masks), where)
        for rank, report in enumerate(reports):
            self.assertEqual(report["env"].get("CUDA_VISIBLE_DEVICES"), masks[rank],
                             f"{where} rank {rank}: the mask gangrun wrote")
            self.assertEqual(report["cuda"]["uuids"], uuids[rank],
                             f"{where} rank {rank}: what the worker's CUDA driver shows")

    def devices_json(self, env, options=(), code=0):
        result = self.gangrun(["devices", "--json", *options], env=env)
        self.assertExit(result, code)
        try:
            return json.loads(result.stdout)
        except json.JSONDecodeError as error:
            self.fail(f"gangrun devices --json printed no JSON: {error}" + result.describe())

    @staticmethod
    def backend(doc, kind):
        return next(b for b in doc["backends"] if b["kind"] == kind)

    # ---- refusals

    def assert_names(self, result, names):
        text = result.stdout + result.stderr
        for name in names:
            found = option_named(text, name) if name.startswith("--") else name in text
            self.assertTrue(found, f"the message does not name {name!r}" + result.describe())

    def assert_refused(self, env, options, names, devices=True):
        """`gangrun devices OPTIONS`, `gangrun --dry-run OPTIONS prog` and a real launch all
        exit 2 naming each of NAMES, and no worker starts."""
        if devices:
            self.assert_names(self.expect_exit(["devices", *options], env, 2), names)
        marker = self.path("started.{rank}")
        program = self.fake("--touch", marker)
        self.assert_names(self.expect_exit(["--dry-run", *options, *program], env, 2), names)
        self.assert_names(self.expect_exit([*options, *program], env, 2), names)
        self.assert_nothing_started()
        self.assertFalse([n for n in os.listdir(self.tmp) if n.startswith("started.")],
                         "a worker ran although gangrun refused")

    def expect_exit(self, args, env, code):
        result = self.gangrun(args, env=env)
        self.assertExit(result, code)
        return result


# =============================================================================================
# 1. CUDA
# =============================================================================================

class Cuda(DeviceTestCase):
    def test_num_gpus_and_gpu_ids_shared_pick_the_first_two_of_four(self):
        env = self.env(cuda=FOUR)
        first_two = [gpu_uuid(FOUR[0]), gpu_uuid(FOUR[1])]
        for selection in (["--num_gpus", 2], ["--gpu_ids", "0,1"]):
            with self.subTest(selection=selection):
                _, reports = self.launch(["--nproc_per_node", 2, *selection], env, workers=2)
                self.assert_cuda_views(reports, ["0,1", "0,1"], [first_two, first_two], str(selection))

    def test_num_gpus_and_gpu_ids_per_rank_give_gpu0_then_gpu1(self):
        env = self.env(cuda=FOUR)
        for selection in (["--num_gpus", 2], ["--gpu_ids", "0,1"]):
            with self.subTest(selection=selection):
                _, reports = self.launch(["--nproc_per_node", 2, "--visible-devices", "per-rank",
                                          *selection], env, workers=2)
                self.assert_cuda_views(reports, ["0", "1"],
                                       [[gpu_uuid(FOUR[0])], [gpu_uuid(FOUR[1])]], str(selection))

    def test_inherited_2_0_per_rank_gives_gpu2_then_gpu0(self):
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="2,0")
        _, reports = self.launch(["--nproc_per_node", 2, "--visible-devices", "per-rank"], env, workers=2)
        self.assert_cuda_views(reports, ["2", "0"], [[gpu_uuid(FOUR[2])], [gpu_uuid(FOUR[0])]])
        # gangrun devices lists the same two, in the same order, with the same tokens.
        visible = self.backend(self.devices_json(env), "cuda")["visible"]
        self.assertEqual([(v["token"], v["uuid"]) for v in visible],
                         [("2", gpu_uuid(FOUR[2])), ("0", gpu_uuid(FOUR[0]))])

    def test_inherited_2_0_shared_every_worker_sees_gpu2_then_gpu0(self):
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="2,0")
        both = [gpu_uuid(FOUR[2]), gpu_uuid(FOUR[0])]
        for count in (2, "gpu"):  # a plain count passes the variable through; "gpu" counts it
            with self.subTest(nproc_per_node=count):
                _, reports = self.launch(["--nproc_per_node", count], env, workers=2)
                self.assert_cuda_views(reports, ["2,0", "2,0"], [both, both], f"--nproc_per_node {count}")

    def test_empty_visible_devices_means_no_gpu(self):
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="")
        result = self.expect_exit(["--nproc_per_node", "gpu", *self.fake("--touch", self.path("started"))], env, 2)
        self.assertRegex(result.stderr, r"(?i)\bno\b.*device", "the message should say there is no device")
        self.assert_names(result, ["--nproc_per_node", "CUDA_VISIBLE_DEVICES"])
        self.assert_nothing_started()
        self.assertFalse(os.path.exists(self.path("started")))
        cuda = self.backend(self.devices_json(env), "cuda")
        self.assertEqual(len(cuda["devices"]), 4, "the unfiltered probe still finds the four")
        self.assertEqual(cuda["visible"], [])
        text = self.expect_exit(["devices"], env, 0).stdout
        self.assertRegex(text, r"CUDA: 0 of 4 device")

    def test_nproc_per_node_gpu_starts_one_worker_per_gpu(self):
        env = self.env(cuda=FOUR)
        _, reports = self.launch(["--nproc_per_node", "gpu"], env, workers=4)
        every = [gpu_uuid(g) for g in FOUR]
        # Shared mode without a selection flag passes the (unset) variable through untouched.
        self.assert_cuda_views(reports, [None] * 4, [every] * 4)
        self.assertEqual([r["local_rank"] for r in reports], [0, 1, 2, 3])

    def test_device_order_decides_what_index_0_is_on_a_mixed_node(self):
        expected = {"PCI_BUS_ID": MIXED_PCI_ORDER[0], "FASTEST_FIRST": MIXED_FASTEST_ORDER[0],
                    None: MIXED_FASTEST_ORDER[0]}  # unset: the driver's default, FASTEST_FIRST
        self.assertNotEqual(gpu_uuid(expected["PCI_BUS_ID"]), gpu_uuid(expected["FASTEST_FIRST"]))
        for order, physical in expected.items():
            with self.subTest(CUDA_DEVICE_ORDER=order):
                want = [[gpu_uuid(physical)]]
                # The user's CUDA_VISIBLE_DEVICES=0, given to the one worker as its mask.
                env = self.env(cuda=MIXED, CUDA_DEVICE_ORDER=order, CUDA_VISIBLE_DEVICES=0)
                _, reports = self.launch(["--nproc_per_node", 1, "--visible-devices", "per-rank"], env, workers=1)
                self.assert_cuda_views(reports, ["0"], want, f"CUDA_DEVICE_ORDER={order} CUDA_VISIBLE_DEVICES=0")
                visible = self.backend(self.devices_json(env), "cuda")["visible"]
                self.assertEqual([v["uuid"] for v in visible], want[0], "gangrun devices agrees with the driver")
                # No variable: gangrun's own index 0 must mean the same GPU as the worker's.
                env = self.env(cuda=MIXED, CUDA_DEVICE_ORDER=order)
                _, reports = self.launch(["--nproc_per_node", 1, "--gpu_ids", 0], env, workers=1)
                self.assert_cuda_views(reports, ["0"], want, f"CUDA_DEVICE_ORDER={order} --gpu_ids 0")

    def test_per_rank_two_devices_each_on_eight_gpus(self):
        env = self.env(cuda=EIGHT)
        _, reports = self.launch(["--nproc_per_node", 4, "--visible-devices", "per-rank",
                                  "--devices-per-proc", 2], env, workers=4)
        self.assert_cuda_views(reports, ["0,1", "2,3", "4,5", "6,7"],
                               [[gpu_uuid(EIGHT[2 * i]), gpu_uuid(EIGHT[2 * i + 1])] for i in range(4)])

    def test_mask_format_uuid_writes_uuids(self):
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="3,1")
        _, reports = self.launch(["--nproc_per_node", 2, "--visible-devices", "per-rank", "--mask-format", "uuid"],
                                 env, workers=2)
        self.assert_cuda_views(reports, [gpu_uuid(FOUR[3]), gpu_uuid(FOUR[1])],
                               [[gpu_uuid(FOUR[3])], [gpu_uuid(FOUR[1])]])
        env = self.env(cuda=FOUR)
        both = [gpu_uuid(FOUR[0]), gpu_uuid(FOUR[1])]
        _, reports = self.launch(["--nproc_per_node", 2, "--num_gpus", 2, "--mask-format", "uuid"], env, workers=2)
        self.assert_cuda_views(reports, [",".join(both)] * 2, [both, both])

    def test_mig_instance_is_one_uuid_per_worker(self):
        # GPU 0 is split into MIG instances; CUDA shows a process its first one. GPUs 1, 2 are whole.
        machine = [gpu("mig-board", "0000:1a:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108,
                       mig=("mig-a", "mig-b")),
                   gpu("whole-1", "0000:3d:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108),
                   gpu("whole-2", "0000:5e:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108)]
        env = self.env(cuda=machine)
        _, reports = self.launch(["--nproc_per_node", 3, "--visible-devices", "per-rank"], env, workers=3)
        self.assert_cuda_views(reports, [mig_uuid("mig-a"), "1", "2"],
                               [[mig_uuid("mig-a")], [gpu_uuid(machine[1])], [gpu_uuid(machine[2])]])
        self.assertEqual(reports[0]["cuda"]["board_uuids"], [gpu_uuid(machine[0])])
        # Shared mode would give the MIG instance and another device to one process.
        self.assert_refused(env, ["--nproc_per_node", 2, "--num_gpus", 2], ["MIG", "CUDA_VISIBLE_DEVICES"])

    def test_inherited_mig_list_split_per_rank_and_refused_shared(self):
        # The scheduler hands the job two MIG instances (as Slurm does, by UUID). Each worker
        # may see only one: per-rank gives one each; shared would show both to every worker,
        # and CUDA enumerates only the first.
        machine = [gpu("mig-board-0", "0000:1a:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108,
                       mig=("mig-0a",)),
                   gpu("mig-board-1", "0000:3d:00.0", name="NVIDIA A100-SXM4-80GB", cc="8.0", sms=108,
                       mig=("mig-1a",))]
        listed = f"{mig_uuid('mig-0a')},{mig_uuid('mig-1a')}"
        env = self.env(cuda=machine, CUDA_VISIBLE_DEVICES=listed)
        self.assert_refused(env, ["--nproc_per_node", "gpu"], ["MIG", "CUDA_VISIBLE_DEVICES"])
        _, reports = self.launch(["--nproc_per_node", 2, "--visible-devices", "per-rank"], env, workers=2)
        self.assert_cuda_views(reports, [mig_uuid("mig-0a"), mig_uuid("mig-1a")],
                               [[mig_uuid("mig-0a")], [mig_uuid("mig-1a")]])


# =============================================================================================
# 2. AMD ROCm (fake KFD sysfs tree; no ROCm runtime here, so only the env is checked)
# =============================================================================================

class Rocm(DeviceTestCase):
    def kfd_tree(self, gpus=3):
        """A KFD topology like the kernel's: node 0 a CPU, nodes 1..GPUS GPUs with render nodes
        (lib/accel/rocm_sysfs.cpp; tests/unit/test_accel_rocm_sysfs.cpp)."""
        root = self.path("kfd-root")
        nodes = os.path.join(root, "sys", "class", "kfd", "kfd", "topology", "nodes")

        def write(path, text):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

        write(os.path.join(nodes, "0", "properties"), "cpu_cores_count 32\nsimd_count 0\n")
        write(os.path.join(nodes, "0", "name"), "\n")
        write(os.path.join(nodes, "0", "gpu_id"), "0\n")
        for n in range(1, gpus + 1):
            minor = 127 + n
            write(os.path.join(nodes, str(n), "properties"),
                  "cpu_cores_count 0\nsimd_count 440\nsimd_per_cu 4\ngfx_target_version 90010\n"
                  f"domain 0\nlocation_id {(0x10 * n) << 8}\nunique_id {0x1000 + n}\n"
                  f"drm_render_minor {minor}\n")
            write(os.path.join(nodes, str(n), "name"), "gfx90a\n")
            write(os.path.join(nodes, str(n), "gpu_id"), f"{4000 + n}\n")
            write(os.path.join(nodes, str(n), "mem_banks", "0", "properties"),
                  "heap_type 1\nsize_in_bytes 68702699520\n")
            write(os.path.join(root, "dev", "dri", f"renderD{minor}"), "")
        return root

    def test_per_rank_masks_go_into_rocr_visible_devices(self):
        env = self.env(sysfs=self.kfd_tree())
        for accelerator in ("rocm", "auto"):
            with self.subTest(accelerator=accelerator):
                _, reports = self.launch(["--accelerator", accelerator, "--nproc_per_node", 3,
                                          "--visible-devices", "per-rank"], env, workers=3, runtimes=())
                for rank, report in enumerate(reports):
                    self.assertEqual(report["env"], {"ROCR_VISIBLE_DEVICES": str(rank)}, f"rank {rank}")
        doc = self.devices_json(env, ["--nproc_per_node", 3, "--visible-devices", "per-rank"])
        self.assertEqual(doc["launch"]["accelerator"], "rocm")
        self.assertEqual([v["uuid"] for v in self.backend(doc, "rocm")["visible"]],
                         [f"GPU-{0x1000 + n:016X}" for n in (1, 2, 3)])

    def test_with_hip_visible_devices_masks_go_into_it(self):
        env = self.env(sysfs=self.kfd_tree(), HIP_VISIBLE_DEVICES="1,0")
        for accelerator in ("rocm", "auto"):
            with self.subTest(accelerator=accelerator):
                _, reports = self.launch(["--accelerator", accelerator, "--nproc_per_node", 2,
                                          "--visible-devices", "per-rank"], env, workers=2, runtimes=())
                self.assertEqual([r["env"] for r in reports],
                                 [{"HIP_VISIBLE_DEVICES": "1"}, {"HIP_VISIBLE_DEVICES": "0"}])


# =============================================================================================
# 3. Gaudi, Ascend, Neuron: the inherited list is split
# =============================================================================================

class VendorLists(DeviceTestCase):
    def masks(self, env, accelerator, workers, variable):
        workers_seen = self.dry_run(["--accelerator", accelerator, "--nproc_per_node", workers,
                                     "--visible-devices", "per-rank", *self.fake("--exit", 0)], env=env)
        self.assert_nothing_started()
        return [w["env"].get(variable) for w in workers_seen]

    def test_hpu_modules_one_per_worker(self):
        env = self.env(HABANA_VISIBLE_MODULES="0,1,2,3")
        self.assertEqual(self.masks(env, "hpu", 4, "HABANA_VISIBLE_MODULES"), ["0", "1", "2", "3"])
        _, reports = self.launch(["--accelerator", "hpu", "--nproc_per_node", 2, "--visible-devices", "per-rank"],
                                 self.env(HABANA_VISIBLE_MODULES="2,3"), workers=2, runtimes=())
        self.assertEqual([r["env"].get("HABANA_VISIBLE_MODULES") for r in reports], ["2", "3"])

    def test_hpu_without_the_variable_is_refused(self):
        self.assert_refused(self.env(),
                            ["--accelerator", "hpu", "--nproc_per_node", 2, "--visible-devices", "per-rank"],
                            ["HABANA_VISIBLE_MODULES"])

    def test_neuron_core_range_split_per_rank(self):
        env = self.env(NEURON_RT_VISIBLE_CORES="0-3")
        self.assertEqual(self.masks(env, "neuron", 4, "NEURON_RT_VISIBLE_CORES"), ["0", "1", "2", "3"])

    def test_ascend_list_with_spaces_is_refused(self):
        self.assert_refused(self.env(ASCEND_RT_VISIBLE_DEVICES="1, 2"),
                            ["--accelerator", "npu", "--nproc_per_node", 2, "--visible-devices", "per-rank"],
                            ["ASCEND_RT_VISIBLE_DEVICES", " 2"])


# =============================================================================================
# 4. Bad input: exit 2 naming the variable or flag and the entry, nothing started
# =============================================================================================

class BadInput(DeviceTestCase):
    def test_bad_cuda_visible_devices(self):
        for value, entry in (("0,0", "0"), ("1gpu", "1gpu"), ("0,7", "7"), ("GPU-zzz", "GPU-zzz"),
                             ("GPU-8932f937", "GPU-8932f937")):  # GPUs 0 and 1 share that prefix
            with self.subTest(CUDA_VISIBLE_DEVICES=value):
                self.assert_refused(self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES=value), ["--nproc_per_node", "gpu"],
                                    ["CUDA_VISIBLE_DEVICES", entry])

    def test_plain_launch_warns_about_an_index_list_the_runtime_would_empty(self):
        # No device option: nothing is probed and the variable passes through, but a
        # repeat that makes CUDA show no GPU is still pointed out.
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="0,0")
        result = self.gangrun(["--nproc_per_node", 1, *self.fake()], env=env)
        self.assertExit(result, 0)
        self.assertIn("CUDA_VISIBLE_DEVICES=0,0: entry '0' repeats GPU 0", result.stderr)
        env = self.env(cuda=FOUR, CUDA_VISIBLE_DEVICES="2,0")
        result = self.gangrun(["--nproc_per_node", 1, *self.fake()], env=env)
        self.assertExit(result, 0)
        self.assertNotIn("CUDA_VISIBLE_DEVICES", result.stderr)

    def test_bad_selection_flags(self):
        cases = [
            (["--gpu_ids", 5], ["--gpu_ids", "5"]),
            (["--gpu_ids", "0,0"], ["--gpu_ids", "0"]),
            (["--include", "localhost:9"], ["--include", "9"]),
            (["--include", "localhost:0", "--exclude", "localhost:1"], ["--include", "--exclude"]),
            (["--devices-per-proc", 2, "--nproc_per_node", 2], ["--devices-per-proc", "per-rank"]),
        ]
        for options, names in cases:
            with self.subTest(options=options):
                self.assert_refused(self.env(cuda=FOUR), options, names)

    def test_per_rank_with_more_workers_than_devices(self):
        env = self.env(cuda=FOUR)
        self.assert_refused(env, ["--nproc_per_node", 5, "--visible-devices", "per-rank"],
                            ["--visible-devices", "5", "4"])
        result = self.expect_exit(["--dry-run", "--nproc_per_node", 3, "--visible-devices", "per-rank",
                                   "--devices-per-proc", 2, *self.fake("--exit", 0)], env, 2)
        self.assertRegex(result.stderr, r"\b3\b.*\b2\b.*\b6\b.*\b4\b",
                         "the message gives workers, devices each, devices needed and selected")

    def test_bad_level_zero_input(self):
        env = self.env(ze=ZE_MACHINE)
        self.assert_refused(env, ["--nproc_per_node", 2, "--visible-devices", "per-rank", "--mask-format", "uuid"],
                            ["--mask-format", "ZE_AFFINITY_MASK"])
        for variables, names in (
                ({"ZE_AFFINITY_MASK": "0.1", "ZE_FLAT_DEVICE_HIERARCHY": "FLAT"}, ["ZE_AFFINITY_MASK", "0.1"]),
                ({"ZE_AFFINITY_MASK": "0.1"}, ["ZE_AFFINITY_MASK", "0.1"]),  # FLAT is this driver's default
                ({"ZE_AFFINITY_MASK": "abc"}, ["ZE_AFFINITY_MASK", "abc"]),
                ({"ZE_FLAT_DEVICE_HIERARCHY": "flat"}, ["ZE_FLAT_DEVICE_HIERARCHY", "flat"])):
            with self.subTest(**variables):
                self.assert_refused(self.env(ze=ZE_MACHINE, **variables), ["--nproc_per_node", "xpu"], names)


# =============================================================================================
# 5. No driver library at all
# =============================================================================================

class NoDriver(DeviceTestCase):
    def test_devices_says_why_there_is_no_cuda_and_no_xpu(self):
        env = self.env(GANGRUN_CUDA_LIBRARY=None, GANGRUN_LEVEL_ZERO_LIBRARY=None)
        paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and "fake_cuda" not in p]
        env["LD_LIBRARY_PATH"] = ":".join(paths)
        if not paths:
            del env["LD_LIBRARY_PATH"]
        text = self.expect_exit(["devices"], env, 0).stdout
        doc = self.devices_json(env)
        cuda, xpu = self.backend(doc, "cuda"), self.backend(doc, "xpu")
        with self.subTest(backend="cuda"):
            if self.loads("libcuda.so.1", env):
                self.skipTest("this machine has a libcuda.so.1")
            self.assertRegex(text, r"CUDA: no devices.*libcuda\.so\.1")
            self.assertEqual(cuda["devices"], [])
            self.assertIn("libcuda.so.1", cuda["unavailable"] or "")
        with self.subTest(backend="xpu"):
            if not os.path.exists(DEBIAN_LIBZE):
                self.skipTest(f"libze_loader.so.1 is not installed ({DEBIAN_LIBZE}): the Level Zero part is skipped")
            if xpu["devices"]:
                self.skipTest("this machine has an Intel GPU driver")
            why = r"zeInit|UNINITIALIZED|no Level Zero driver"
            self.assertRegex(text, r"Intel XPU.*no devices.*(" + why + ")")
            self.assertEqual(xpu["devices"], [])
            self.assertRegex(xpu["unavailable"] or "", why)

    @staticmethod
    def loads(library, env):
        probe = f"import ctypes\ntry:\n ctypes.CDLL({library!r})\nexcept OSError:\n raise SystemExit(1)"
        return subprocess.run([sys.executable, "-c", probe], env=env, timeout=2 * harness.EVENT_TIMEOUT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


# =============================================================================================
# 6. Intel XPU with the fake Level Zero loader
# =============================================================================================

class IntelXpu(DeviceTestCase):
    def test_mask_0_2_and_its_reverse_keep_driver_order(self):
        in_driver_order = [ZE_LEAVES[0], ZE_LEAVES[2]]
        for mask in ("0,2", "2,0"):
            with self.subTest(ZE_AFFINITY_MASK=mask):
                env = self.env(ze=ZE_MACHINE, ZE_AFFINITY_MASK=mask)
                result, reports = self.launch(["--nproc_per_node", "xpu"], env, workers=2, runtimes=("--ze",))
                for report in reports:
                    self.assertEqual(report["env"].get("ZE_AFFINITY_MASK"), mask, "shared: passed through")
                    self.assertEqual(report["ze"]["uuids"], in_driver_order, "the driver keeps its order")
                warned = re.search(r"(?i)warn.*ZE_AFFINITY_MASK.*order", result.stderr)
                if mask == "2,0":
                    self.assertTrue(warned, "no warning that Level Zero keeps its order" + result.describe())
                else:
                    self.assertFalse(warned, "a warning for a mask in driver order" + result.describe())
                result, reports = self.launch(["--nproc_per_node", 2, "--visible-devices", "per-rank"], env,
                                              workers=2, runtimes=("--ze",))
                self.assertEqual([r["env"].get("ZE_AFFINITY_MASK") for r in reports], ["0", "2"])
                self.assertEqual([r["ze"]["uuids"] for r in reports], [[u] for u in in_driver_order])

    def test_per_rank_over_four_leaves(self):
        env = self.env(ze=ZE_MACHINE)
        _, reports = self.launch(["--nproc_per_node", "xpu", "--visible-devices", "per-rank"], env, workers=4,
                                 runtimes=("--ze",))
        for rank, report in enumerate(reports):
            self.assertEqual(report["env"], {"ZE_AFFINITY_MASK": str(rank), "ZE_FLAT_DEVICE_HIERARCHY": "FLAT"})
            self.assertEqual(report["ze"]["uuids"], [ZE_LEAVES[rank]], f"rank {rank}")

    def test_composite_single_tiles_are_card_dot_tile(self):
        env = self.env(ze=ZE_MACHINE, ZE_FLAT_DEVICE_HIERARCHY="COMPOSITE", ZE_AFFINITY_MASK="0.1,1.0")
        _, reports = self.launch(["--nproc_per_node", "xpu", "--visible-devices", "per-rank"], env, workers=2,
                                 runtimes=("--ze",))
        self.assertEqual([r["env"] for r in reports],
                         [{"ZE_AFFINITY_MASK": "0.1", "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"},
                          {"ZE_AFFINITY_MASK": "1.0", "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}])
        # Under COMPOSITE the worker sees the card, with the one tile as its sub-device.
        self.assertEqual([r["ze"]["uuids"] for r in reports], [[ZE_CARD0["uuid"]], [ZE_CARD1["uuid"]]])
        self.assertEqual([r["ze"]["sub_uuids"] for r in reports],
                         [[[ZE_CARD0["tiles"][1]["uuid"]]], [[ZE_CARD1["tiles"][0]["uuid"]]]])

    def test_dry_run_shows_mask_and_hierarchy_per_worker(self):
        env = self.env(ze=ZE_MACHINE)
        options = ["--nproc_per_node", 2, "--visible-devices", "per-rank", "--devices-per-proc", 2,
                   *self.fake("--exit", 0)]
        workers = self.dry_run(options, env=env)
        self.assertEqual([{k: v for k, v in w["env"].items() if k.startswith("ZE_")} for w in workers],
                         [{"ZE_AFFINITY_MASK": "0,1", "ZE_FLAT_DEVICE_HIERARCHY": "FLAT"},
                          {"ZE_AFFINITY_MASK": "2,3", "ZE_FLAT_DEVICE_HIERARCHY": "FLAT"}])
        text = self.expect_exit(["--dry-run", *options], env, 0).stdout
        for mask in ("0,1", "2,3"):
            self.assertIn(f"ZE_AFFINITY_MASK={mask}", text)
        self.assertEqual(text.count("ZE_FLAT_DEVICE_HIERARCHY=FLAT"), 2, text)
        self.assert_nothing_started()


# =============================================================================================
# 7. A real NVIDIA GPU, when there is one
# =============================================================================================

class RealGpu(DeviceTestCase):
    def test_real_gpu_masks_match_torch(self):
        if os.environ.get("GANGRUN_CUDA_LIBRARY"):
            self.skipTest("no CUDA GPU here (GANGRUN_CUDA_LIBRARY overrides the driver)")
        gpus = self.torch_gpus()
        if not gpus:
            self.skipTest("no CUDA GPU here")
        env = harness.clean_env()
        for name in ("CUDA_VISIBLE_DEVICES", "FAKE_CUDA_MACHINE"):
            env.pop(name, None)
        listed = self.gangrun(["devices", "--json"], env=env, timeout=120)
        self.assertExit(listed, 0)
        print("\n--- gangrun devices --json ---\n" + listed.stdout, flush=True)
        visible = self.backend(json.loads(listed.stdout), "cuda")["visible"]
        self.assertEqual(len(visible), gpus, "gangrun and torch count the same GPUs")
        workers = 2 if gpus >= 2 else 1
        result, reports = self.launch(["--nproc_per_node", workers, "--visible-devices", "per-rank"], env,
                                      workers=workers, runtimes=("--cuda", "--torch", "--expect-torch-mask"),
                                      timeout=300)
        print("--- launch ---\n" + result.stdout + result.stderr, flush=True)
        for rank, report in enumerate(reports):
            mask = report["env"]["CUDA_VISIBLE_DEVICES"]
            self.assertEqual(mask, visible[rank]["token"], f"rank {rank}")
            self.assertEqual(report["torch"]["count"], len(mask.split(",")), f"rank {rank}")
            self.assertEqual(report["cuda"]["uuids"], [visible[rank]["uuid"]], f"rank {rank}: driver API")
            if report["torch"]["uuids"] and report["torch"]["uuids"][0] is not None:
                self.assertEqual(report["torch"]["uuids"][0].lower(), visible[rank]["uuid"].lower(),
                                 f"rank {rank}: torch")

    @staticmethod
    def torch_gpus():
        """How many GPUs torch sees, or 0 (no libcuda, no torch, no CUDA build, no GPU)."""
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            return 0
        probe = "import torch\nprint(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
        env = {k: v for k, v in harness.clean_env().items() if k != "CUDA_VISIBLE_DEVICES"}
        try:
            done = subprocess.run([TEST_PYTHON, "-c", probe], env=env, timeout=120, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return 0
        return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


if __name__ == "__main__":
    harness.main()
