"""--max_restarts: a failure restarts the whole local gang (docs/supervision.md, "Supervision")."""

import os
import re
import signal

import harness
from harness import GangrunTestCase, TEST_PYTHON

TORCH_WORKER = os.path.join(harness.HERE, "torch_ddp_worker.py")


def read_records(path):
    """[{rank, local_rank, restart, max_restarts, pid}] from fake_worker --record lines."""
    records = []
    with open(path) as f:
        for line in f:
            fields = dict(item.split("=", 1) for item in line.split())
            records.append({k: (int(v) if re.fullmatch(r"-?\d+", v) else v) for k, v in fields.items()})
    return records


class Restarts(GangrunTestCase):
    def barrier(self, failing_rank, other_rank):
        """Actions that make FAILING_RANK fail only after OTHER_RANK has recorded itself in
        this attempt, so every attempt is recorded by both ranks."""
        mark = self.path("recorded.{rank}.{restart}")
        other = self.path(f"recorded.{other_rank}.{{restart}}")
        return ["--touch", mark, "--only-rank", failing_rank, "--wait-file", other, 20]

    def test_attempt_that_succeeds_after_failures_gives_0(self):
        log = self.path("attempts.log")
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 3, "--term-timeout", 2, *self.fake(
            "--record", log, *self.barrier(1, 0),
            "--only-rank", 1, "--restart-fail-until", 2,
            "--sleep", 0.3,
            "--exit", 0)], timeout=60)
        self.assertExit(result, 0)
        records = read_records(log)
        for rank in (0, 1):
            mine = [r for r in records if r["rank"] == rank]
            self.assertEqual([r["restart"] for r in mine], [0, 1, 2], f"rank {rank}: attempts seen {mine}")
            self.assertTrue(all(r["max_restarts"] == 3 for r in mine), f"TORCHELASTIC_MAX_RESTARTS: {mine}")
            self.assertEqual(len({r["pid"] for r in mine}), 3, "every attempt should start fresh processes")
        self.assert_dead([r["pid"] for r in records], what="workers of every attempt")

    def test_restarts_exhausted_returns_the_failure_exit_code(self):
        log = self.path("attempts.log")
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 2, "--term-timeout", 2, *self.fake(
            "--record", log, *self.barrier(0, 1),
            "--only-rank", 0, "--exit", 7,
            "--sleep", 30)], timeout=60)
        self.assertExit(result, 7)
        records = read_records(log)
        self.assertEqual(sorted(r["restart"] for r in records if r["rank"] == 0), [0, 1, 2])
        self.assertEqual(sorted(r["restart"] for r in records if r["rank"] == 1), [0, 1, 2])
        self.assertLess(result.elapsed, 30)

    def test_restarts_exhausted_by_signal_gives_128_plus_signal(self):
        log = self.path("attempts.log")
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 1, "--term-timeout", 2, *self.fake(
            "--record", log, *self.barrier(1, 0),
            "--only-rank", 1, "--signal", "ALRM",
            "--sleep", 30)], timeout=60)
        self.assertExit(result, 128 + 14)
        self.assertEqual(sorted(r["restart"] for r in read_records(log) if r["rank"] == 1), [0, 1])

    def test_signal_to_gangrun_ends_the_job_without_restart(self):
        log = self.path("attempts.log")
        proc = self.start(["--nproc_per_node", 2, "--max_restarts", 3, "--term-timeout", 2, *self.fake(
            "--record", log, "--touch", self.ready_file(), "--sleep", 30)])
        self.wait_ready(2)
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc, timeout=20)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())
        self.assertEqual(sorted(r["restart"] for r in read_records(log)), [0, 0], "a stop by signal is no failure to restart")

    def test_no_restart_by_default(self):
        log = self.path("attempts.log")
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--record", log, *self.barrier(1, 0), "--only-rank", 1, "--exit", 5, "--sleep", 30)], timeout=60)
        self.assertExit(result, 5)
        records = read_records(log)
        self.assertEqual(sorted(r["restart"] for r in records), [0, 0])
        self.assertTrue(all(r["max_restarts"] == 0 for r in records), records)

    def test_restart_count_drives_the_failure(self):
        # Only attempt 1 fails: attempt 0 succeeds outright, so no restart happens at all.
        log = self.path("attempts.log")
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 2, *self.fake(
            "--record", log, "--if-restart-at-least", 1, "--exit", 3, "--exit", 0)], timeout=60)
        self.assertExit(result, 0)
        self.assertEqual(sorted(r["restart"] for r in read_records(log)), [0, 0])


class TorchRestarts(GangrunTestCase):
    def test_a_ddp_gang_whose_rank_was_killed_starts_again_and_trains(self):
        # Real PyTorch (gloo): rank 1 dies by SIGKILL after the first all-reduce, while
        # rank 0 blocks in the DDP step; the whole gang is stopped and attempt 1 meets
        # again through the same store and trains.
        harness.require_torch()
        out = self.path("out")
        os.mkdir(out)
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 1, "--term-timeout", 2, "--python", TEST_PYTHON,
                               TORCH_WORKER, out, self.pid_dir, "--kill-rank-in-attempt-0", 1], timeout=240)
        self.assertExit(result, 0)
        self.assertIn("restarting", result.stderr)
        pids = []
        for rank in (0, 1):
            attempts = [self.read_json(os.path.join(out, f"attempt.{restart}.{rank}"))["pid"] for restart in (0, 1)]
            self.assertNotEqual(attempts[0], attempts[1], f"rank {rank} was not started again")
            pids += attempts
            outcome = self.read_json(os.path.join(out, f"result.{rank}.json"))
            self.assertEqual(outcome["restart"], 1)
            self.assertEqual(outcome["all_reduce"], outcome["expected_sum"])
            self.assertTrue(outcome["ddp_grads_in_sync"])
        self.assert_dead(pids, what="workers of both attempts")


if __name__ == "__main__":
    harness.main()
