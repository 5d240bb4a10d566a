"""The hung rank is not the victim: real PyTorch (gloo, CPU; Debian's torch 1.13, or 2.x as
integration.test_hung_rank.torch2), 4 ranks, one of which never reaches an all-reduce whose
group times out after a few seconds. The three that reached it fail with torch's timeout;
gangrun names the one they waited for as the root cause ("rank 2 never reached the
collective; ranks 0, 1, 3 timed out waiting") in its summary and its --report, on one node
and across two agents on loopback, and exits with the first failure's code. A rank that
exits 0 before the all-reduce is named too (its peers lose their connection to it). With
--failure_window 0 the first failure is the root cause, as before.

The failure window here is generous (the three ranks must have exited within it on a
loaded machine); it is the window's upper bound, not a wait: the test waits for gangrun
to end.
"""

import os
import re

import harness
import static_nodes
from harness import EVENT_TIMEOUT, TEST_PYTHON, GangrunTestCase

SCRIPT = os.path.join(harness.HERE, "hung_rank_worker.py")
WINDOW = ["--failure_window", 15]
HUNG = "rank 2 never reached the collective; ranks 0, 1, 3 timed out waiting"
JOB_TIMEOUT = 3 * EVENT_TIMEOUT


class HungRank(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()
        self.report = self.path("report.json")

    def worker(self, mode):
        return ["--python", TEST_PYTHON, SCRIPT, self.pid_dir, mode, 2]

    def check_nothing_left(self):
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_the_rank_that_never_reached_the_collective_is_the_root_cause(self):
        result = self.gangrun(["--nproc_per_node", 4, *WINDOW, "--report", self.report, *self.worker("hang")],
                              timeout=JOB_TIMEOUT)
        # The job's code is the first failure's: torch's exception exits 1.
        self.assertExit(result, 1)
        self.assertIn(HUNG, result.stderr, result.describe())
        self.assertIn("Root cause (the rank the failed ranks waited for):", result.stderr)
        summary = result.stderr[result.stderr.index(HUNG):]
        self.assertRegex(summary, r"rank:\s+2 \(local_rank: 2\)")
        self.assertIn("First failure (the job exits with its code):", summary)
        doc = self.read_json(self.report)
        attempt = doc["attempts"][-1]
        self.assertEqual(attempt["root_cause"]["rank"], 2)
        self.assertIn(attempt["first_failure"]["rank"], (0, 1, 3))
        self.assertEqual(attempt["blame"], HUNG)
        self.assertEqual(harness.report_root_cause(doc)["rank"], 2)
        ranks = {w["rank"]: w for w in attempt["workers"]}
        self.assertTrue(ranks[2]["stopped_by_gangrun"])
        for rank in (0, 1, 3):
            self.assertEqual(ranks[rank]["exit_code"], 1, ranks[rank])
            self.assertFalse(ranks[rank]["stopped_by_gangrun"])
        self.check_nothing_left()

    def test_a_rank_that_left_before_the_collective_is_the_root_cause(self):
        result = self.gangrun(["--nproc_per_node", 4, *WINDOW, "--report", self.report, *self.worker("leave")],
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, 1)
        self.assertIn("rank 2 exited first (with code 0); ranks 0, 1, 3 failed after it", result.stderr,
                      result.describe())
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertEqual(attempt["root_cause"]["rank"], 2)
        self.check_nothing_left()

    def test_without_a_failure_window_the_first_failure_is_the_root_cause(self):
        result = self.gangrun(["--nproc_per_node", 4, "--failure_window", 0, "--report", self.report,
                               *self.worker("hang")], timeout=JOB_TIMEOUT)
        self.assertExit(result, 1)
        self.assertNotIn("never reached", result.stderr)
        self.assertIn("Root cause (first observed failure):", result.stderr)
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertIn(attempt["root_cause"]["rank"], (0, 1, 3))
        self.assertIsNone(attempt["blame"])
        self.check_nothing_left()

    def test_across_two_nodes_the_hung_rank_on_the_second_is_named_on_both(self):
        env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, TMPDIR=self.tmp)
        job = static_nodes.StaticJob(self, 2, env=env)
        job.start_all(lambda node: ["--nproc_per_node", 2, *WINDOW, "--report", self.path(f"report.{node}.json"),
                                    *self.worker("hang")])
        results = job.finish(timeout=JOB_TIMEOUT)
        for result in results.values():
            self.assertExit(result, 1)
        head, second = results[0], results[1]
        # Rank 2 ran on the second node: its summary names it, the head says the job ended there.
        self.assertIn("Root cause (the rank the failed ranks waited for):", second.stderr, second.describe())
        self.assertRegex(second.stderr, r"rank 2 on node 1 \([^)]+\) never reached the collective; "
                                        r"ranks 0, 1, 3 timed out waiting")
        self.assertRegex(head.stderr, r"the job ended on another node: rank 2 on node 1 \([^)]+\) never reached the "
                                      r"collective; ranks 0, 1, 3 timed out waiting \(this node exits with 1\)",
                         head.describe())
        for node, rank in ((0, None), (1, 2)):
            doc = self.read_json(self.path(f"report.{node}.json"))
            self.assertEqual(doc["job"]["root_cause_here"], node == 1)
            root = harness.report_root_cause(doc)
            if rank is not None:
                self.assertEqual(root["rank"], rank)
        self.check_nothing_left()


if __name__ == "__main__":
    harness.main()
