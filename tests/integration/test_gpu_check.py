"""scripts/gpu-check, the GPU acceptance kit (docs/building.md, "GPU acceptance").

Here there is no GPU, so the kit runs in its two forms CI can run: without a GPU (it says so in
one line and exits 0) and with the stand-in driver (tests/helpers/fake_cuda.cpp, loaded by
gangrun and by the kit's workers through GANGRUN_CUDA_LIBRARY), whose rows must pass or skip,
and fail when what the workers' driver shows disagrees with what gangrun listed, or when the
node has fewer GPUs than expected. On a host whose nvidia-smi lists GPUs the real form runs too;
elsewhere that test skips and says why.
"""

import json
import os
import shutil
import stat
import subprocess

import harness
from harness import GANGRUN, PEER_PYTHON, TEST_PYTHON

SCRIPT = os.path.join(harness.REPO, "scripts", "gpu-check")
FAKE_CUDA = os.environ.get("FAKE_CUDA_LIBRARY")
KIT_TIMEOUT = 300  # the kit bounds itself to under 5 minutes

PASSING_ROWS = ("devices", "device order", "per-rank masks", "UUID masks")
HARDWARE_ROWS = ("torch view", "NCCL all_reduce", "NUMA binding", "preflight", "flight recorder")

# Two GPUs on the lower buses that are slower, two above them that are faster: the driver's
# default order (fastest first) differs from PCI_BUS_ID's.
MACHINE = {"driver_version": 12060, "gpus": [
    {"name": "NVIDIA H100 80GB HBM3", "uuid": "aaaaaaaa-0000-4000-8000-000000000001", "pci": "0000:8a:00.0",
     "memory": 85899345920, "cc": "9.0", "sms": 132, "speed_rank": 0},
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "bbbbbbbb-0000-4000-8000-000000000002", "pci": "0000:1a:00.0",
     "memory": 85899345920, "cc": "8.0", "sms": 108, "speed_rank": 1},
    {"name": "NVIDIA H100 80GB HBM3", "uuid": "cccccccc-0000-4000-8000-000000000003", "pci": "0000:5e:00.0",
     "memory": 85899345920, "cc": "9.0", "sms": 132, "speed_rank": 0},
]}


class GpuCheck(harness.GangrunTestCase):
    def kit(self, *args, code, env=None, python=TEST_PYTHON):
        """Runs the kit (through its own #! line) with ARGS; asserts it exits CODE."""
        result = harness.run_tool([SCRIPT, "--gangrun", GANGRUN, "--python", python, *args],
                                  timeout=KIT_TIMEOUT, env=env or harness.clean_env(), check=False)
        self.assertEqual(result.returncode, code, f"gpu-check {' '.join(args)} exited {result.returncode}\n"
                         f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")
        return result

    def stand_in(self, *args, code):
        if not FAKE_CUDA or not os.path.isfile(FAKE_CUDA):
            self.fail(f"FAKE_CUDA_LIBRARY is not a file ({FAKE_CUDA!r}); ctest sets it: build the fake_cuda target")
        return self.kit("--stand-in", FAKE_CUDA, *args, code=code)

    def write_machine(self, name, machine):
        path = self.path(name)
        with open(path, "w") as f:
            json.dump(machine, f)
        return path

    def write_program(self, name, text):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, stat.S_IRWXU)
        return path

    def rows(self, result):
        doc = json.loads(result.stdout)
        return {row["check"]: row for row in doc["checks"]}, doc

    # ---- without a GPU

    def test_without_nvidia_smi_it_says_so_in_one_line_and_exits_0(self):
        result = self.kit("--nvidia-smi", self.path("absent", "nvidia-smi"), code=0)
        self.assertEqual(result.stdout.splitlines(),
                         ["gpu-check: no NVIDIA GPU here (nvidia-smi not found): nothing to check"])

    def test_no_gpu_where_some_were_expected_fails(self):
        result = self.kit("--nvidia-smi", self.path("absent", "nvidia-smi"), "--expect-gpus", "8", code=1)
        self.assertEqual(result.stdout.splitlines(),
                         ["gpu-check FAILED: expected 8 GPU(s), found none (nvidia-smi not found)"])

    def test_an_nvidia_smi_without_a_driver_is_no_gpu_too(self):
        smi = self.write_program("nvidia-smi", "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't "
                                 "communicate with the NVIDIA driver.\"\nexit 9\n")
        result = self.kit("--nvidia-smi", smi, code=0)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1, result.stdout)
        self.assertRegex(lines[0], r"^gpu-check: no NVIDIA GPU here \(nvidia-smi: nvidia-smi exited 9: "
                                   r"NVIDIA-SMI has failed .*\): nothing to check$")

    def test_an_nvidia_smi_that_lists_nothing_is_no_gpu(self):
        smi = self.write_program("nvidia-smi", "#!/bin/sh\nexit 0\n")
        result = self.kit("--nvidia-smi", smi, "--json", code=0)
        _, doc = self.rows(result)
        self.assertEqual((doc["passed"], doc["checks"]), (True, []))
        self.assertIn("nvidia-smi lists no GPU", doc["note"])

    # ---- the stand-in driver

    def test_stand_in_rows_pass_and_the_hardware_rows_skip(self):
        machine = self.write_machine("machine.json", MACHINE)
        rows, doc = self.rows(self.stand_in("--stand-in-machine", machine, "--json", code=0))
        self.assertEqual(doc["mode"], "stand-in")
        self.assertEqual(sorted(rows), sorted(PASSING_ROWS + HARDWARE_ROWS))
        for name in PASSING_ROWS:
            self.assertEqual(rows[name]["result"], "pass", rows[name])
        for name in HARDWARE_ROWS:
            self.assertEqual((rows[name]["result"], rows[name]["detail"]), ("skip", "stand-in driver"))
        self.assertIn("3 worker(s) got 0:0, 1:1, 2:2", rows["per-rank masks"]["detail"])
        # The kit's own machine (four GPUs), as a table this time.
        table = self.stand_in(code=0).stdout
        self.assertIn("gpu-check passed: 4 passed, 5 skipped, 0 failed", table)
        self.assertRegex(table, r"(?m)^per-rank masks +pass +4 worker\(s\)")

    def test_fewer_gpus_than_expected_fails(self):
        machine = self.write_machine("machine.json", MACHINE)
        rows, doc = self.rows(self.stand_in("--stand-in-machine", machine, "--expect-gpus", "4", "--json", code=1))
        self.assertFalse(doc["passed"])
        self.assertEqual(rows["devices"]["result"], "fail")
        self.assertIn("expected 4 GPU(s), the stand-in's machine lists 3", rows["devices"]["detail"])
        self.stand_in("--stand-in-machine", machine, "--expect-gpus", "3", code=0)

    def test_workers_whose_driver_disagrees_with_gangrun_fail_the_mask_row(self):
        # The workers' driver sees GPUs 0 and 2 swapped (by UUID) behind the same buses:
        # what a stale or lying device list would give. The masks gangrun plans are the same
        # indices, so the per-rank row must find that rank 0 did not get the GPU gangrun listed
        # as index 0; UUID masks name the GPUs themselves and still pass.
        machine = self.write_machine("machine.json", MACHINE)
        swapped = json.loads(json.dumps(MACHINE))
        first, third = swapped["gpus"][0], swapped["gpus"][2]
        first["uuid"], third["uuid"] = third["uuid"], first["uuid"]
        other = self.write_machine("swapped.json", swapped)
        gangrun = self.write_program(
            "gangrun", f"#!/bin/sh\n[ \"$1\" = devices ] || export FAKE_CUDA_MACHINE={other}\nexec {GANGRUN} \"$@\"\n")
        result = harness.run_tool([SCRIPT, "--gangrun", gangrun, "--python", TEST_PYTHON, "--stand-in", FAKE_CUDA,
                                   "--stand-in-machine", machine, "--json"],
                                  timeout=KIT_TIMEOUT, env=harness.clean_env(), check=False)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        rows, _ = self.rows(result)
        self.assertEqual(rows["devices"]["result"], "pass", rows["devices"])
        self.assertEqual(rows["per-rank masks"]["result"], "fail", rows["per-rank masks"])
        # Fastest first: the H100 at 5e (cccccccc) is index 0, the one at 8a (aaaaaaaa) index 1.
        self.assertRegex(rows["per-rank masks"]["detail"], r"rank 0: its driver shows \['GPU-aaaaaaaa-.*'\], "
                                                           r"expected \[GPU-cccccccc-.*; rank 1: ")
        self.assertEqual(rows["UUID masks"]["result"], "pass", rows["UUID masks"])

    def test_a_job_that_fails_fails_its_row(self):
        # An interpreter that cannot run the workers: the mask rows fail with gangrun's exit.
        rows, _ = self.rows(self.kit("--stand-in", FAKE_CUDA, "--json", code=1, python="/bin/false"))
        self.assertEqual(rows["per-rank masks"]["result"], "fail")
        self.assertIn("the job: gangrun exited", rows["per-rank masks"]["detail"])

    # ---- real GPUs, where there are some

    def test_real_gpus_pass(self):
        if os.environ.get("GANGRUN_TEST_NO_TORCH"):
            self.skipTest("GANGRUN_TEST_NO_TORCH is set: the real-GPU form needs PyTorch")
        smi = shutil.which("nvidia-smi")
        if smi is None:
            self.skipTest("no nvidia-smi on PATH: the real-GPU form is not run here")
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
        if listed.returncode != 0 or "GPU" not in listed.stdout:
            self.skipTest(f"nvidia-smi lists no GPU here (exit {listed.returncode})")
        self.kit(code=0, python=PEER_PYTHON if os.access(PEER_PYTHON, os.X_OK) else TEST_PYTHON)


if __name__ == "__main__":
    harness.main()
