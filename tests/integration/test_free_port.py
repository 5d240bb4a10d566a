"""Without --master_port a single-node job gets a free port, not a fixed 29500, so two jobs
on one machine do not collide (docs/environment.md, "What each worker gets": MASTER_PORT).
A given port that is taken stops the job (exit 3) with a message that names the option as
the user spelled it; on an accelerate-style line on one machine gangrun moves to a free
port instead, as accelerate launch does."""

import os
import socket

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

    def held_port(self):
        """A port a listening socket of this test holds, closed when the test ends."""
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(held.close)
        held.bind(("127.0.0.1", 0))
        held.listen()
        return held.getsockname()[1]

    def test_a_taken_port_is_named_as_given(self):
        port = self.held_port()
        lines = [
            (["--nproc_per_node", 2, "--master-port", port], {}, "--master-port"),
            (["--nproc_per_node", 2, "--master_port", port], {}, "--master_port"),
            (["--nproc_per_node", 2, "--main_process_port", port], {}, "--main_process_port"),
            (["--nproc_per_node", 2], {"GANGRUN_MASTER_PORT": str(port)}, "GANGRUN_MASTER_PORT"),
        ]
        for args, variables, named in lines:
            with self.subTest(named=named):
                result = self.gangrun([*args, *self.fake("--exit", 0)],
                                      env=harness.clean_env(**variables))
                self.assertExit(result, 3)
                self.assertIn(f"choose another {named},", result.stderr)
                self.assertIn(f"127.0.0.1:{port}", result.stderr)
                self.assertFalse(self.pid_files(), "no worker may start")

    def test_accelerate_line_moves_to_a_free_port_on_one_machine(self):
        port = self.held_port()
        for mode in ([], ["--multi_gpu"], ["--cpu"]):
            with self.subTest(mode=mode):
                result = self.gangrun([*mode, "--num_processes", 2, "--main_process_port", port,
                                       *self.fake("--print-env", self.path("env.{rank}.json"))])
                self.assertExit(result, 0)
                self.assertIn(f"--main_process_port {port}: cannot listen on", result.stderr)
                self.assertIn("the store listens on free port", result.stderr)
                workers = 1 if mode == ["--cpu"] else 2
                ports = {self.read_json(self.path(f"env.{rank}.json"))["env"]["MASTER_PORT"]
                         for rank in range(workers)}
                self.assertEqual(len(ports), 1, ports)
                self.assertNotIn(str(port), ports)

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
