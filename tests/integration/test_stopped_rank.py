"""A rank stopped from outside (kill -STOP, a scheduler suspending the job, a debugger) in a gang
that then hangs (docs/hangs.md, "A stopped rank"): the hang summary names it as stopped and lists
it first, before the ranks that wait for it; its stack is read without pausing it (py-spy
--nonblocking), since py-spy's pausing read cannot attach to a stopped process; and --on-hang
stop ends it with SIGTERM at once, because the teardown sends SIGCONT after the stop signal
(docs/supervision.md). `gangrun stacks` names a stopped rank the same way.

TorchStoppedRank runs real PyTorch gloo on CPU (GANGRUN_TEST_PYTHON, and 2.x as
integration.test_stopped_rank.torch2): 2 ranks all-reduce in a loop (hang_doctor_worker.py
all-reduce-loop) until the test stops rank 1, found by the pid it recorded. --term-timeout is
60 s, so a stopped rank that only SIGKILL after it could end shows as killed by SIGKILL in the
report. StoppedRankStacks needs no torch: plain Python ranks (the worker's idle mode) read by
`gangrun stacks`. Both need the py-spy beside GANGRUN_TEST_PEER_PYTHON, and skip without it.

Every wait is for an event (a line of a rank, a process's state, gangrun's end); the test
continues (SIGCONT) the rank it stopped before it checks that nothing outlived gangrun.
"""

import json
import signal

import harness
from harness import EVENT_TIMEOUT, TEST_PYTHON
from test_hang_doctor import HANG_EXIT, JOB_TIMEOUT, SCRIPT, HangTestCase, hang_groups, hang_groups_of, py_spy

WORLD = 2
STOPPED_RANK = 1
TERM_TIMEOUT = 60
STOPPED = "stopped (SIGSTOP or another stop signal; state T)"


def report_worker(report, rank):
    """The report's record of RANK in the last attempt (harness's names)."""
    workers = {worker["rank"]: worker for worker in harness.report_attempts(report)[-1]}
    return workers[rank]


class StoppedRankCase(HangTestCase):
    def output_of(self, proc):
        """What a started gangrun has written to stdout and stderr so far."""
        with open(self.path(f"gangrun.{proc.index}.out"), errors="replace") as f:
            return f.read() + self.stderr_of(proc)

    def assert_named_first(self, groups, rank):
        """GROUPS (hang_groups) lead with RANK alone, named as stopped."""
        self.assertEqual(groups[0][0], {rank}, f"the stopped rank is not first: {groups}")
        self.assertTrue(groups[0][2].startswith(STOPPED), f"rank {rank} is not named as stopped: {groups}")
        for group in groups[1:]:
            self.assertNotIn("stopped", group[2], groups)

    def assert_read_without_pausing(self, stacks, rank):
        """STACKS (the report's form) hold RANK's threads, read although it was stopped."""
        entry = {entry["rank"]: entry for entry in stacks["ranks"]}[rank]
        self.assertEqual(entry.get("stopped"), {"state": "T", "text": STOPPED}, entry)
        self.assertIsNone(entry["unavailable"], f"the stopped rank's stack was not read: {entry}")
        self.assertTrue(entry["threads"], entry)

    def assert_ended_by_the_stop_signal(self, report, rank):
        worker = report_worker(report, rank)
        self.assertEqual(worker["signal"], "SIGTERM",
                         f"the stopped rank did not end with SIGTERM when the gang was stopped (SIGKILL: "
                         f"only after --term-timeout {TERM_TIMEOUT} s): {worker}")


class TorchStoppedRank(StoppedRankCase):
    def setUp(self):
        harness.require_torch()
        self.py_spy = py_spy()
        super().setUp()

    def test_a_stopped_rank_is_named_first_and_ends_with_the_stop(self):
        gangrun = self.start(["--nproc-per-node", WORLD, "--hang-timeout", 3, "--on-hang", "stop",
                              "--term-timeout", TERM_TIMEOUT, "--stack-tool", self.py_spy, "--report", self.report,
                              "--log-dir", self.log_dir, "--python", TEST_PYTHON, SCRIPT, self.pid_dir,
                              "all-reduce-loop"])
        # Both ranks are in the loop once each has printed its first step.
        harness.wait_for(lambda: all(f"rank {r}: step 1" in self.output_of(gangrun) for r in range(WORLD))
                         or gangrun.poll() is not None, JOB_TIMEOUT, "every rank's first all-reduce")
        self.assertIsNone(gangrun.poll(), "gangrun ended before its ranks all-reduced" + self.output_of(gangrun))
        pids = self.pid_files()
        self.stop_worker(pids[STOPPED_RANK])
        result = self.finish(gangrun, timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        report = self.read_json(self.report)
        with self.subTest("the hang names the stopped rank first"):
            groups = hang_groups(self, self.console(result))
            self.assert_named_first(groups, STOPPED_RANK)
            self.assertEqual(set().union(*(g[0] for g in groups)), set(range(WORLD)), groups)
            hang = report["attempts"][-1]["hang"]
            self.assertEqual(hang.get("stopped"), [STOPPED_RANK], hang)
            self.assertTrue(hang["stacks"]["summary"][0].startswith(f"rank {STOPPED_RANK} ("), hang["stacks"])
            self.assert_read_without_pausing(hang["stacks"], STOPPED_RANK)
            with open(hang["stacks"]["file"] or self.path("no stacks file")) as f:
                self.assertIn(f"rank {STOPPED_RANK} (", f.read().splitlines()[0])
        with self.subTest("the stop ends the stopped rank with SIGTERM"):
            self.assert_ended_by_the_stop_signal(report, STOPPED_RANK)
        self.assert_dead(pids.values(), what="workers")


class StoppedRankStacks(StoppedRankCase):
    """`gangrun stacks` of a running job with a stopped rank: named first, read all the same."""

    def test_gangrun_stacks_names_a_stopped_rank_first(self):
        gangrun, env, pids = self.start_for_stacks("--term-timeout", TERM_TIMEOUT, "--report", self.report)
        # Rank 0 is stopped where it waits for its peers; rank 2 waits in load_batch, the odd
        # one out of the running ranks.
        harness.wait_for(lambda: "rank 0 is up" in self.output_of(gangrun) or gangrun.poll() is not None,
                         EVENT_TIMEOUT, "rank 0 to be up")
        self.stop_worker(pids[0])

        def stacks(*args):
            return self.stacks(env, "--pid", str(gangrun.pid), *args)

        harness.wait_for(lambda: "load_batch" in stacks(), EVENT_TIMEOUT, "rank 2 in load_batch")
        self.assert_named_first(hang_groups_of(self, stacks()), 0)
        self.assert_read_without_pausing(json.loads(stacks("--json")), 0)
        self.assertIsNone(gangrun.poll(), "reading the stacks stopped the job")
        gangrun.send_signal(signal.SIGTERM)
        self.finish(gangrun)
        self.assert_ended_by_the_stop_signal(self.read_json(self.report), 0)
        self.assert_dead(pids.values(), what="workers")


if __name__ == "__main__":
    harness.main()
