"""Gang supervision when a worker fails (docs/supervision.md, "Supervision"): sessions, SIGTERM to every
other worker's group, SIGKILL after --term-timeout, grandchildren, the subreaper."""

import os
from datetime import datetime

import harness
from harness import GangrunTestCase


def read_signal_record(path):
    """[(label, unix_time)] from a fake_worker --on-signal file."""
    with open(path) as f:
        return [(label, float(stamp)) for label, stamp in (line.split() for line in f if line.strip())]


class Teardown(GangrunTestCase):
    def test_each_worker_runs_in_its_own_session(self):
        result = self.gangrun(["--nproc_per_node", 3, *self.fake("--print-env", self.path("env.{rank}.json"))])
        self.assertExit(result, 0)
        sessions = set()
        for rank in range(3):
            info = self.read_json(self.path(f"env.{rank}.json"))
            self.assertEqual(info["sid"], info["pid"], f"rank {rank} is not a session leader")
            self.assertEqual(info["pgid"], info["pid"], f"rank {rank} does not lead its process group")
            sessions.add(info["sid"])
        self.assertEqual(len(sessions), 3)
        self.assertNotIn(os.getsid(0), sessions)

    def failing_rank_2(self, *window):
        """Rank 2 fails once every worker is up; the others would sleep 30 s. Returns the time
        rank 2 failed and {rank: time SIGTERM reached it} for ranks 0, 1, 3."""
        go = self.path("go")
        fail_time = self.path("fail-time")
        proc = self.start(["--nproc_per_node", 4, "--term-timeout", 10, *window, *self.fake(
            "--on-term", self.path("term.{rank}"),
            "--touch", self.ready_file(),
            "--only-rank", 2, "--wait-file", go, 300,
            "--only-rank", 2, "--stamp", fail_time,
            "--only-rank", 2, "--exit", 1,
            "--sleep", 30)])
        self.wait_ready(4)
        pids = self.pid_files()
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 1)
        self.assertIn("Root cause (first observed failure):", result.stderr)
        with open(fail_time) as f:
            failed_at = float(f.read())
        terms = {}
        for rank in (0, 1, 3):
            record = read_signal_record(self.path(f"term.{rank}"))
            self.assertEqual([label for label, _ in record], ["term"], f"rank {rank}")
            terms[rank] = record[0][1]
        self.assert_dead(pids.values(), what="workers")
        return failed_at, terms

    def test_failure_sends_sigterm_to_every_other_worker_promptly(self):
        failed_at, terms = self.failing_rank_2("--failure_window", 0)
        for rank, term_at in terms.items():
            latency = term_at - failed_at
            self.assertLess(latency, 1.0, f"SIGTERM reached rank {rank} {latency:.3f}s after the failure")

    def test_by_default_the_others_may_fail_by_themselves_for_the_failure_window(self):
        # One failure with three ranks running blames nobody else: after the window (1 s,
        # which the others' SIGTERM can only come after) rank 2 is the root cause.
        failed_at, terms = self.failing_rank_2()
        for rank, term_at in terms.items():
            self.assertGreaterEqual(term_at - failed_at, 1.0, f"SIGTERM reached rank {rank} within the window")

    def test_workers_ignoring_sigterm_are_killed_after_term_timeout(self):
        go = self.path("go")
        report = self.path("report.json")
        # They would sleep for an hour: only gangrun's SIGKILL can end them in time for the test.
        proc = self.start(["--nproc_per_node", 3, "--term-timeout", 1, "--report", report, *self.fake(
            "--ignore-term", "--on-term", self.path("term.{rank}"),
            "--touch", self.ready_file(),
            "--only-rank", 1, "--wait-file", go, 300,
            "--only-rank", 1, "--exit", 4,
            "--sleep", 3600)])
        self.wait_ready(3)
        pids = self.pid_files()
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 4)
        for rank in (0, 2):
            self.assertTrue(os.path.exists(self.path(f"term.{rank}")), f"rank {rank} never got SIGTERM")
        workers = {w["rank"]: w for w in self.read_json(report)["attempts"][-1]["workers"]}
        failed_at = datetime.fromisoformat(workers[1]["ended_at"].replace("Z", "+00:00"))
        for rank in (0, 2):
            self.assertEqual(workers[rank]["signal"], "SIGKILL", f"rank {rank}")
            self.assertIn("after --term-timeout", workers[rank]["ended"], f"rank {rank}")
            grace = (datetime.fromisoformat(workers[rank]["ended_at"].replace("Z", "+00:00")) - failed_at)
            self.assertGreater(grace.total_seconds(), 0.8, "gangrun did not give the grace period before SIGKILL")
        self.assert_dead(pids.values(), what="workers")

    def test_teardown_is_prompt_while_others_flood_output(self):
        # rank 0 writes more than the console could take in days; once it floods, rank 1
        # fails, and that must stop rank 0 at once rather than after its output drains.
        flooding = self.path("flooding")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 1, *self.fake(
            "--only-rank", 0, "--touch", flooding,
            "--only-rank", 0, "--lines", 10_000_000_000,
            "--only-rank", 1, "--wait-file", flooding, 300,
            "--only-rank", 1, "--exit", 1)], binary_output=True)
        self.assertExit(result, 1)

    def test_grandchildren_die_when_a_worker_fails(self):
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 2, "--term-timeout", 1, *self.fake(
            "--spawn-grandchild", "--spawn-setsid-grandchild",
            "--touch", self.ready_file(),
            "--only-rank", 1, "--wait-file", go, 300,
            "--only-rank", 1, "--exit", 1,
            "--sleep", 30)])
        self.wait_ready(2)
        workers = self.pid_files()
        grandchildren = self.pid_files("grandchild")
        setsid_grandchildren = self.pid_files("setsid_grandchild")
        self.assertEqual(len(grandchildren), 2)
        self.assertEqual(len(setsid_grandchildren), 2)
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 1)
        self.assert_dead(workers.values(), what="workers")
        self.assert_dead(grandchildren.values(), what="grandchildren in the workers' groups")
        self.assert_dead(setsid_grandchildren.values(), what="grandchildren that called setsid()")

    def test_grandchildren_die_when_the_job_succeeds(self):
        # The grandchildren keep the workers' stdout/stderr open, as data-loader processes do.
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--spawn-grandchild", "--spawn-setsid-grandchild", "--echo", "done", "--exit", 0)])
        self.assertExit(result, 0)
        grandchildren, setsid_grandchildren = self.pid_files("grandchild"), self.pid_files("setsid_grandchild")
        self.assertEqual((len(grandchildren), len(setsid_grandchildren)), (2, 2))
        self.assert_dead(grandchildren.values(), what="grandchildren in the workers' groups")
        self.assert_dead(setsid_grandchildren.values(), what="grandchildren that called setsid()")

    def test_single_worker_grandchild_dies_when_the_job_succeeds(self):
        result = self.gangrun([*self.fake("--spawn-setsid-grandchild", "--exit", 0)])
        self.assertExit(result, 0)
        grandchildren = self.pid_files("setsid_grandchild")
        self.assertEqual(len(grandchildren), 1)
        self.assert_dead(grandchildren.values(), what="grandchild that called setsid()")

    def test_orphaned_grandchild_stays_under_the_job(self):
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 2, *self.fake(
            "--only-rank", 0, "--spawn-setsid-grandchild",
            "--only-rank", 0, "--exit", 0,
            "--wait-file", go, 300)])
        grandchild = self.wait_pid_files(1, "setsid_grandchild")[0]
        rank0 = self.wait_pid_files(2)[0]
        self.assert_dead([rank0], what="rank 0 (exits at once)")

        def parent_of(pid):
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            return int(stat[stat.rindex(")") + 2:].split()[1])
        # Re-parented to rank 0's shim (a subreaper between gangrun and the worker), which
        # kills it when the job ends, or when gangrun dies.
        harness.wait_for(lambda: parent_of(grandchild) != rank0 and parent_of(parent_of(grandchild)) == proc.pid,
                         harness.EVENT_TIMEOUT,
                         f"the orphaned grandchild to be reparented to a shim under gangrun (pid {proc.pid})")
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 0)
        self.assert_dead([grandchild], what="orphaned grandchild")


if __name__ == "__main__":
    harness.main()
