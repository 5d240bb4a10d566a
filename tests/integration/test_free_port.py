"""Without --master_port a single-node job gets a free port, not a fixed 29500, so two jobs
on one machine do not collide (docs/environment.md, "What each worker gets": MASTER_PORT)."""

import os

import harness
from harness import GangrunTestCase, TEST_PYTHON

SCRIPT = os.path.join(harness.HERE, "torch_ddp_worker.py")


class FreePort(GangrunTestCase):
    def test_two_concurrent_fake_jobs_get_different_ports(self):
        go = self.path("go")
        jobs = []
        for job in range(2):
            jobs.append(self.start(["--nproc_per_node", 2, *self.fake(
                "--print-env", self.path(f"env.{job}.{{rank}}.json"),
                "--touch", self.path(f"ready.{job}.{{rank}}"),
                "--wait-file", go, 300)]))
        self.wait_ready(4)  # both jobs are running at the same time
        with open(go, "w"):
            pass
        ports = []
        for job, proc in enumerate(jobs):
            self.assertExit(self.finish(proc), 0)
            job_ports = {self.read_json(self.path(f"env.{job}.{rank}.json"))["env"]["MASTER_PORT"] for rank in (0, 1)}
            self.assertEqual(len(job_ports), 1, f"job {job}: workers disagree on MASTER_PORT {job_ports}")
            ports += job_ports
        self.assertNotIn("29500", ports, "a single-node job without --master_port should get a free port")
        self.assertNotEqual(ports[0], ports[1], "two concurrent jobs got the same port")

    def test_master_port_0_means_pick_a_free_port(self):
        for spelling in ("--master_port", "--master-port"):
            with self.subTest(spelling=spelling):
                result = self.gangrun(["--nproc_per_node", 2, spelling, 0,
                                       *self.fake("--print-env", self.path("env.{rank}.json"))])
                self.assertExit(result, 0)
                ports = {self.read_json(self.path(f"env.{rank}.json"))["env"]["MASTER_PORT"] for rank in (0, 1)}
                self.assertEqual(len(ports), 1)
                port = ports.pop()
                self.assertRegex(port, r"^\d+$")
                self.assertTrue(1 <= int(port) <= 65535 and port != "29500", port)

    def test_two_concurrent_torch_jobs_both_succeed(self):
        harness.require_torch()
        jobs = []
        for job in range(2):
            out = self.path(f"out{job}")
            os.mkdir(out)
            jobs.append((out, self.start(["--nproc_per_node", 2, "--python", TEST_PYTHON, SCRIPT, out, self.pid_dir])))
        ports = []
        for out, proc in jobs:
            self.assertExit(self.finish(proc, timeout=150), 0)
            for rank in (0, 1):
                outcome = self.read_json(os.path.join(out, f"result.{rank}.json"))
                self.assertEqual(outcome["all_reduce"], outcome["expected_sum"])
            ports.append(self.read_json(os.path.join(out, "env.0.json"))["env"]["MASTER_PORT"])
        self.assertNotEqual(ports[0], ports[1])


if __name__ == "__main__":
    harness.main()
