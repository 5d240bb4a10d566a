"""A round's start is not a hang (docs/hangs.md, "A slow start"): while a rank has neither
printed a line nor connected to the store (importing a package from a slow filesystem, say),
--hang-timeout counts no silence; --start-timeout bounds the start instead, and a start that
outlasts it is named as a start timeout, in its own report key, never as a hang. Before, a
short --hang-timeout fired during the imports and called the job hung.

Real PyTorch, gloo on CPU (GANGRUN_TEST_PYTHON: Debian's torch 1.13; torch 2.x as
integration.test_slow_start.torch2), 2 ranks (slow_start_worker.py): every rank's first import
lasts until a file (the gate) exists, printing nothing, then the ranks join a group,
all-reduce once and exit 0. Across two nodes, a node whose rank is still importing is not called hung
by the lead either, and one that passes --start-timeout ends the job as a start timeout. The stack tool is the py-spy beside GANGRUN_TEST_PEER_PYTHON when
there is one; without it the start is named all the same.

Every wait is for an event (a file a worker writes, a line in gangrun's output, gangrun's end),
each with a bound; no test asserts how long anything took, only that a timeout had passed.
"""

import os
import signal
import time

import harness
import static_nodes
from harness import EVENT_TIMEOUT, PEER_PYTHON, TEST_PYTHON, GangrunTestCase
from test_hang_doctor import HANG_EXIT, SUMMARY_HEAD

SCRIPT = os.path.join(harness.HERE, "slow_start_worker.py")
WORLD = 2
# Long enough that the joined gang's one all-reduce (its store requests are progress too) is
# never silent for it on a loaded machine.
HANG_TIMEOUT = 5
START_TIMEOUT = 4
# gangrun's note that the hang timeout passed while the round was still starting.
STILL_STARTING_NOTE = "but the round is still starting"
START_TIMEOUT_HEAD = "the round is still starting"


class SlowStart(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()
        self.report = self.path("report.json")
        self.gate = self.path("gate")

    def stack_tool(self):
        path = os.path.join(os.path.dirname(PEER_PYTHON), "py-spy")
        return ["--stack-tool", path] if os.access(path, os.X_OK) else []

    def launch(self, *options):
        return self.start(["--nproc-per-node", WORLD, "--hang-timeout", HANG_TIMEOUT, *options,
                           *self.stack_tool(), "--report", self.report,
                           "--python", TEST_PYTHON, SCRIPT, self.pid_dir, self.gate])

    def wait_in_import(self, gangrun):
        importing = [os.path.join(self.pid_dir, f"importing.{rank}") for rank in range(WORLD)]
        harness.wait_for(lambda: all(map(os.path.exists, importing)) or gangrun.poll() is not None,
                         EVENT_TIMEOUT, "every rank to be inside its slow import")
        if gangrun.poll() is not None:
            self.fail("gangrun ended before every rank was in its import" + self.finish(gangrun).describe())

    def test_a_slow_import_is_not_a_hang_and_the_job_then_succeeds(self):
        gangrun = self.launch("--on-hang", "stop")
        self.wait_in_import(gangrun)
        # gangrun says when --hang-timeout has passed during the start: only then is the gate
        # opened, so the silence has lasted at least the hang timeout.
        try:
            harness.wait_for(lambda: STILL_STARTING_NOTE in self.stderr_of(gangrun) or gangrun.poll() is not None,
                             EVENT_TIMEOUT + HANG_TIMEOUT, "the note that the round is still starting")
        except AssertionError:
            gangrun.send_signal(signal.SIGTERM)
            self.fail("no note that --hang-timeout passed while the ranks were starting"
                      + self.finish(gangrun).describe())
        if gangrun.poll() is not None:
            self.fail("gangrun ended while the ranks were still importing: the start was called a hang"
                      + self.finish(gangrun).describe())
        with open(self.gate, "w"):
            pass
        result = self.finish(gangrun, timeout=3 * EVENT_TIMEOUT)
        self.assertExit(result, 0)
        self.assertNotIn(SUMMARY_HEAD, result.stderr, result.describe())
        note = next(line for line in result.stderr.splitlines() if STILL_STARTING_NOTE in line)
        self.assertIn(f"--hang-timeout {HANG_TIMEOUT} s", note)
        self.assertIn("ranks 0, 1 have neither printed a line nor connected to the store", note)
        self.assertIn("--start-timeout (600 s) bounds the start", note)
        for rank in range(WORLD):
            self.assertIn(f"rank {rank}: sum {WORLD * (WORLD + 1) // 2}", result.stdout, result.describe())
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertNotIn("hang", attempt)
        self.assertNotIn("start_timeout", attempt)

    def test_a_start_past_the_start_timeout_is_named_as_such(self):
        gangrun = self.launch("--start-timeout", START_TIMEOUT, "--on-hang", "stop")
        self.wait_in_import(gangrun)
        # The gate never opens: the ranks stay in their import until gangrun stops them.
        result = self.finish(gangrun, timeout=3 * EVENT_TIMEOUT + START_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        self.assertNotIn(SUMMARY_HEAD, result.stderr, result.describe())
        head = next((line for line in result.stderr.splitlines() if START_TIMEOUT_HEAD in line
                     and "--start-timeout" in line), None)
        self.assertIsNotNone(head, "no start timeout named" + result.describe())
        self.assertIn(f"still starting {START_TIMEOUT} s after it began (--start-timeout {START_TIMEOUT} s)", head)
        self.assertIn("ranks 0, 1 have neither printed a line nor connected to the store", head)
        self.assertIn("this is not a hang", head)
        self.assertIn("give a longer --start-timeout, or 0 for no limit", head)
        self.assertIn("--on-hang stop: stopping the workers, still starting", result.stderr, result.describe())
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertNotIn("hang", attempt)
        start = attempt["start_timeout"]
        self.assertEqual(start["timeout_s"], START_TIMEOUT, start)
        self.assertEqual(start["action"], "stop", start)
        self.assertEqual(start["starting"], list(range(WORLD)), start)
        if self.stack_tool():
            # py-spy read the ranks inside their import.
            self.assertEqual(start["importing"], list(range(WORLD)), start)
            self.assertIn("every rank still starting is importing a module", result.stderr, result.describe())
            self.assertIn("_wait_for_gate", result.stderr, result.describe())
        self.assert_dead(self.recorded_pids(), what="workers")


class SlowStartAcrossNodes(GangrunTestCase):
    """Two nodes of one rank each: rank 0 (node 0, the lead) imports at once and waits at the
    store in init_process_group, silent; rank 1 (node 1) is in its slow import. Node 1 tells
    the lead no silence while its rank starts, so the lead names no hang; once the gate opens,
    both ranks join, all-reduce and every agent exits 0."""

    def setUp(self):
        harness.require_torch()
        super().setUp()
        self.gate = self.path("gate")

    def test_a_node_still_starting_is_not_called_hung(self):
        env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, SLOW_START_RANKS="1")
        job = static_nodes.StaticJob(self, 2, env=env)
        agents = job.start_all(lambda node: ["--nproc_per_node", 1, "--hang-timeout", HANG_TIMEOUT,
                                             "--report", self.path(f"report.{node}.json"), "--python",
                                             TEST_PYTHON, SCRIPT, self.pid_dir, self.gate])
        marker = os.path.join(self.pid_dir, "importing.1")
        harness.wait_for(lambda: os.path.exists(marker) or any(a.poll() is not None for a in agents.values()),
                         EVENT_TIMEOUT, "rank 1 to be inside its slow import")
        # No event says that the lead looked at the silence after --hang-timeout: observed only
        # as at least twice the timeout since rank 1 was in its import (and so silent).
        in_import = time.monotonic()
        harness.wait_for(lambda: time.monotonic() - in_import >= 2 * HANG_TIMEOUT
                         or any(a.poll() is not None for a in agents.values()),
                         EVENT_TIMEOUT + 2 * HANG_TIMEOUT, "twice --hang-timeout with rank 1 importing")
        ended = {node: a.poll() for node, a in agents.items() if a.poll() is not None}
        with open(self.gate, "w"):
            pass
        results = static_nodes.finish(self, agents, 3 * EVENT_TIMEOUT)
        described = "".join(f"\n=== agent of node {node}:{result.describe()}" for node, result in results.items())
        self.assertEqual(ended, {}, "an agent ended while rank 1 was still importing" + described)
        for node, result in results.items():
            self.assertEqual(result.returncode, 0, f"agent of node {node}" + described)
            self.assertNotIn(SUMMARY_HEAD, result.stderr, described)
            attempt = self.read_json(self.path(f"report.{node}.json"))["attempts"][-1]
            self.assertNotIn("hang", attempt, described)
        self.assertIn(f"rank 1: sum {WORLD * (WORLD + 1) // 2}", results[1].stdout, described)

    def test_a_node_past_the_start_timeout_ends_the_job_as_a_start_timeout(self):
        """--start-timeout on both nodes, the gate never opens: node 1, whose rank is still in its
        import, names the start timeout and stops its workers (--on-hang stop); the job ends with
        the hang's code on both agents, and no report calls it a hang."""
        env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, SLOW_START_RANKS="1")
        job = static_nodes.StaticJob(self, 2, env=env)
        agents = job.start_all(lambda node: ["--nproc_per_node", 1, "--start-timeout", START_TIMEOUT,
                                             "--on-hang", "stop", "--report", self.path(f"report.{node}.json"),
                                             "--python", TEST_PYTHON, SCRIPT, self.pid_dir, self.gate])
        results = static_nodes.finish(self, agents, 3 * EVENT_TIMEOUT + START_TIMEOUT)
        described = "".join(f"\n=== agent of node {node}:{result.describe()}" for node, result in results.items())
        for node, result in results.items():
            self.assertEqual(result.returncode, HANG_EXIT, f"agent of node {node}" + described)
            self.assertNotIn(SUMMARY_HEAD, result.stderr, described)
            self.assertNotIn("hang", self.read_json(self.path(f"report.{node}.json"))["attempts"][-1], described)
        head = next((line for line in results[1].stderr.splitlines() if START_TIMEOUT_HEAD in line
                     and "--start-timeout" in line), None)
        self.assertIsNotNone(head, "node 1 named no start timeout" + described)
        self.assertIn("rank 1 has neither printed a line nor connected to the store", head, described)
        start = self.read_json(self.path("report.1.json"))["attempts"][-1]["start_timeout"]
        self.assertEqual((start["action"], start["starting"]), ("stop", [1]), start)
        self.assert_dead(self.recorded_pids(), what="workers")


if __name__ == "__main__":
    harness.main()
