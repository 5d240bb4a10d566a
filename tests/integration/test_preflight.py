"""gangrun preflight (docs/preflight.md): a short job with the launch's options whose workers
report what they see and measure an all-reduce together; the head node judges and prints.

One node and two static nodes on loopback, three simulated nodes (network namespaces) one of
which sends through a 100 Mbit/s shaper, with real PyTorch (GANGRUN_TEST_PYTHON: Debian's
torch 1.13, or 2.x as integration.test_preflight.torch2). A node's interpreter that cannot
import torch is an interpreter started with -S (no site-packages). Every wait has a timeout.
"""

import json
import os
import stat

import harness
import netns_nodes
import static_nodes
from harness import EVENT_TIMEOUT, TEST_PYTHON
from test_devices import DeviceTestCase, gpu
from test_multinode import LOOPBACK

PREFLIGHT_FAILED = 6
JOB_TIMEOUT = 4 * EVENT_TIMEOUT


class PreflightCase(harness.GangrunTestCase):
    def setUp(self):
        super().setUp()
        harness.require_torch()

    def python_without_torch(self):
        """An interpreter that runs TEST_PYTHON without its site-packages, so torch is missing."""
        path = self.path("python-without-torch")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nexec {TEST_PYTHON} -S \"$@\"\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def check(self, document, name):
        """The rows of check NAME in a --json document."""
        rows = [row for row in document["checks"] if row["check"] == name]
        self.assertTrue(rows, f"no {name!r} row in {[row['check'] for row in document['checks']]}")
        return rows

    def start_nodes(self, per_node_args, env=None):
        """{node: agent} of a static preflight over len(PER_NODE_ARGS) nodes on loopback."""
        env = {**(env or harness.clean_env()), "GANGRUN_JOB_SECRET": harness.TEST_JOB_SECRET}
        job = static_nodes.StaticJob(self, len(per_node_args), env=env, command=["preflight"])
        return job.start_all(lambda node: per_node_args[node])


class OneNode(PreflightCase):
    def test_a_healthy_node_passes_with_every_check(self):
        result = self.gangrun(["preflight", "--nproc-per-node", 2, "--python", TEST_PYTHON], timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        for name in ("store", "torch", "devices", "log dir", "/dev/shm", "open files", "memlock"):
            self.assertRegex(result.stdout, rf"(?m)^{name}\s+node 0 \(.*\)\s+ok\s", result.describe())
        self.assertRegex(result.stdout, r"(?m)^all-reduce\s+the gang \(2 ranks\)\s+ok\s+gloo of 4.0 MiB")
        self.assertIn("preflight passed", result.stdout)
        self.assertNotIn("Traceback", result.stderr)

    def test_json_is_for_tools(self):
        result = self.gangrun(["preflight", "--nproc-per-node", 2, "--python", TEST_PYTHON, "--json"],
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        document = json.loads(result.stdout)
        self.assertTrue(document["passed"])
        gang = self.check(document, "all-reduce")[0]
        self.assertEqual(gang["result"], "ok")
        self.assertIn("gloo", gang["detail"])
        collectives = document["facts"]["collectives"]
        self.assertEqual(len(collectives), 2)
        self.assertGreater(collectives[0]["gang"]["bus_bytes_per_s"], 0)
        torch_version = document["facts"]["ranks"][0]["torch"]["version"]
        self.assertIn(torch_version, self.check(document, "torch")[0]["detail"])

    def test_an_interpreter_without_torch_fails_and_says_what_to_do(self):
        python = self.python_without_torch()
        result = self.gangrun(["preflight", "--nproc-per-node", 1, "--python", python], timeout=JOB_TIMEOUT)
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertRegex(result.stdout, r"(?m)^torch\s+node 0 \(.*\)\s+FAIL\s+.*cannot import torch")
        self.assertIn("fix: install torch for", result.stdout)
        self.assertRegex(result.stdout, r"(?m)^all-reduce\s+the gang\s+skipped")

    def test_preflight_before_a_launch_refuses_a_job_that_fails_it(self):
        marker = self.path("job-ran")
        program = ["-c", f"open({marker!r}, 'w').close()"]
        python = self.python_without_torch()
        result = self.gangrun(["--preflight", "--nproc-per-node", 1, "--python", python, "--no-python", python,
                               *program], timeout=JOB_TIMEOUT)
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertIn("the job was not started", result.stderr)
        self.assertFalse(os.path.exists(marker), "the job ran although its preflight failed")

        result = self.gangrun(["--preflight", "--nproc-per-node", 1, "--python", TEST_PYTHON, "--no-python",
                               TEST_PYTHON, *program], timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assertIn("preflight passed", result.stdout)
        self.assertTrue(os.path.exists(marker), "the job did not run after its preflight passed")

    def test_bad_input_is_a_usage_error_and_starts_nothing(self):
        for args, words in ((["--preflight-timeout", "0"], "at least 1 s"),
                            (["--preflight-timeout", "soon"], "preflight timeout"),
                            (["train.py"], "takes launch options but no program"),
                            (["--preflight"], "--preflight is for a launch")):
            result = self.gangrun(["preflight", *args])
            self.assertExit(result, 2)
            self.assertIn(words, result.stderr)
        self.assert_nothing_started()


class FakeGpus(DeviceTestCase):
    def test_gpus_torch_cannot_see_fail_the_devices_check(self):
        # gangrun finds two GPUs through the fake driver; the workers' torch (a CPU build) sees
        # none: the node would fail its first CUDA call an hour into the queue.
        harness.require_torch()
        env = self.env(cuda=[gpu("a", "0000:1a:00.0"), gpu("b", "0000:1b:00.0")])
        result = self.gangrun(["preflight", "--nproc-per-node", "gpu", "--visible-devices", "per-rank", "--python",
                               TEST_PYTHON], env=env,
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertRegex(result.stdout, r"(?m)^devices\s+node 0 \(.*\)\s+FAIL\s+2 cuda device\(s\), driver [\d.]+; "
                                        r"masks: CUDA_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=1; but torch \S+ sees no CUDA "
                                        r"device \(a CPU build\)")
        self.assertIn("fix: install a CUDA build of torch", result.stdout)
        # The collectives fall back to gloo, so the rest of the node is still checked.
        self.assertRegex(result.stdout, r"(?m)^all-reduce\s+the gang \(2 ranks\)\s+ok\s+gloo")


class TwoNodes(PreflightCase):
    def test_a_node_without_torch_is_named_on_the_head(self):
        agents = self.start_nodes([["--nproc_per_node", 2, "--python", TEST_PYTHON],
                                   ["--nproc_per_node", 1, "--python", self.python_without_torch()]])
        head, other = static_nodes.finish(self, agents, timeout=JOB_TIMEOUT).values()
        self.assertExit(head, PREFLIGHT_FAILED)
        self.assertExit(other, PREFLIGHT_FAILED)
        self.assertRegex(head.stdout, r"(?m)^torch\s+node 1 \(.*\)\s+FAIL\s+.*cannot import torch")
        self.assertRegex(head.stdout, r"(?m)^node 0 \(.*\): Python [\d.]+, torch \S+, .*2 ranks$")
        self.assertRegex(head.stdout, r"(?m)^node 1 \(.*\): .*torch \(cannot import\).*1 rank$")
        self.assertNotRegex(head.stdout, r"(?m)^versions\s.*FAIL", "a missing torch is not a version difference")
        self.assertIn("the table is on node 0", other.stdout)

    def test_a_healthy_pair_passes_and_a_differing_variable_is_a_warning(self):
        agents = self.start_nodes([["--nproc_per_node", 1, "--python", TEST_PYTHON, "--json"],
                                   ["--nproc_per_node", 1, "--python", TEST_PYTHON]])
        # Node 1's environment differs from node 0's in one variable the workers inherit.
        head, other = static_nodes.finish(self, agents, timeout=JOB_TIMEOUT).values()
        self.assertExit(head, 0)
        self.assertExit(other, 0)
        document = json.loads(head.stdout)
        self.assertTrue(document["passed"], head.stdout)
        self.assertEqual(self.check(document, "store")[0]["result"], "ok")
        pairs = self.check(document, "node pairs")[0]
        self.assertEqual(pairs["result"], "ok")
        self.assertIn("0-1", pairs["detail"])
        self.assertEqual(self.check(document, "clock")[0]["result"], "ok")

    def test_variables_that_differ_between_nodes_are_shown_as_a_diff(self):
        env = harness.clean_env()
        job = static_nodes.StaticJob(self, 2, command=["preflight"])
        for node, debug in ((0, "WARN"), (1, "INFO")):
            job.start(node, ["--nproc_per_node", 1, "--python", TEST_PYTHON],
                      env={**env, "GANGRUN_JOB_SECRET": harness.TEST_JOB_SECRET, "NCCL_DEBUG": debug})
        head = job.finish(timeout=JOB_TIMEOUT)[0]
        self.assertExit(head, 0)
        self.assertRegex(head.stdout, r"(?m)^variables\s+nodes differ\s+warn\s+NCCL_DEBUG: 'INFO' on node 1 "
                                      r"\(.*\); 'WARN' on node 0")

    def test_with_preflight_an_elastic_job_goes_on_without_the_node_that_failed_it(self):
        # Three c10d agents, --nnodes 2:3, each checking itself before it joins: the one whose
        # interpreter cannot import torch exits 6 and never joins; the other two run the job.
        port = harness.free_port()
        env = {**harness.clean_env(), "GANGRUN_JOB_SECRET": harness.TEST_JOB_SECRET}
        pythons = [TEST_PYTHON, self.python_without_torch(), TEST_PYTHON]
        agents = [self.start(["--preflight", "--python", python, "--nnodes", "2:3", "--rdzv_backend", "c10d",
                              "--rdzv_endpoint", f"{LOOPBACK}:{port}", "--rdzv_conf", "last_call_timeout=1",
                              "--nproc_per_node", 1, *self.fake("--exit", 0)], env=env)
                  for python in pythons]
        results = [self.finish(agent, timeout=JOB_TIMEOUT) for agent in agents]
        self.assertExit(results[1], PREFLIGHT_FAILED)
        self.assertRegex(results[1].stdout, r"(?m)^torch\s+node 0 \(.*\)\s+FAIL\s+.*cannot import torch")
        self.assertIn("this node does not join the job; the others go on without it while at least 2 nodes",
                      results[1].stderr)
        for node in (0, 2):
            self.assertExit(results[node], 0)
            self.assertIn("preflight passed", results[node].stdout)
        self.assertEqual(len(self.pid_files()), 2, "the job should have run on the two nodes that passed")
        self.assertRegex(results[0].stderr + results[2].stderr, r"2 nodes, world size 2")

    def test_a_rank_that_never_answers_is_named_and_the_preflight_still_ends(self):
        # Node 1's "interpreter" hangs before Python starts (an import on a stuck file system):
        # the head names its rank after --preflight-timeout, and rank 0 then fails on purpose,
        # which ends the job on every node, the stuck worker included.
        stuck = self.path("python-that-hangs")
        with open(stuck, "w") as f:
            f.write("#!/bin/sh\nexec sleep 600\n")
        os.chmod(stuck, stat.S_IRWXU)
        agents = self.start_nodes([["--nproc_per_node", 2, "--python", TEST_PYTHON, "--preflight-timeout", 2],
                                   ["--nproc_per_node", 1, "--python", stuck, "--preflight-timeout", 2]])
        head, other = static_nodes.finish(self, agents, timeout=JOB_TIMEOUT).values()
        self.assertExit(head, PREFLIGHT_FAILED)
        self.assertRegex(head.stdout, r"(?m)^store\s+ranks 2\s+FAIL\s+1 of 3 ranks sent nothing to the store at "
                                      r"\S+ within 2(\.0)? s")
        self.assertRegex(head.stdout, r"(?m)^all-reduce\s+the gang\s+skipped\s+ranks \[2\] did not answer")
        self.assertNotEqual(other.returncode, 0, other.describe())

    def test_a_node_that_never_comes_is_named_within_the_timeout(self):
        job = static_nodes.StaticJob(self, 2, command=["preflight"])
        job.start(0, ["--nproc_per_node", 1, "--python", TEST_PYTHON, "--preflight-timeout", 2])
        result = job.finish(timeout=JOB_TIMEOUT)[0]
        self.assertExit(result, 3)
        self.assertIn("waiting for node rank 1 to join", result.stderr)


class SlowNode(PreflightCase):
    def test_a_node_much_slower_than_its_peers_is_named(self):
        reason = netns_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        with netns_nodes.Nodes(self, 3) as nodes:
            # Node 3's cable sends at 100 Mbit/s; the others' are as fast as the CPUs allow.
            shaped = nodes.run(3, ["tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "100mbit", "burst",
                                   "64kb", "latency", "100ms"], timeout=30)
            self.assertExit(shaped, 0)
            env = harness.clean_env(TMPDIR=self.tmp, GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET)
            job = static_nodes.StaticJob(self, 3, nodes=nodes, master_port=29500, env=env, command=["preflight"])
            job.start_all(lambda node_rank: ["--nproc_per_node", 1, "--python", TEST_PYTHON, "--json"])
            results = job.finish(timeout=JOB_TIMEOUT)
            for node_rank, result in results.items():
                self.assertEqual(result.returncode, 0, f"node {node_rank + 1}" + static_nodes.describe(results))
        document = json.loads(results[0].stdout)
        pairs = self.check(document, "node pairs")[0]
        self.assertEqual(pairs["result"], "warn", pairs)
        self.assertRegex(pairs["detail"], r"^node 2 \(node3\): [\d.]+ GB/s at best", pairs)
        self.assertNotIn("node 0 (", pairs["detail"].split(" (the median")[0])
        self.assertNotIn("node 1 (", pairs["detail"].split(" (the median")[0])


if __name__ == "__main__":
    harness.main()
