"""Per-worker log files, redirects, tee and the console filter (DESIGN.md section 4).

Assumption (torchrun's behaviour): the log files hold the worker's raw output, without the
console prefix.
"""

import os

import harness
from harness import GangrunTestCase, prefixed_lines

PAD = "x" * 32


def worker_lines(rank, count):
    return [f"rank={rank} line={i} {PAD}" for i in range(count)]


class LogDir(GangrunTestCase):
    def log(self, log_dir, run_id, attempt, local_rank, stream):
        return os.path.join(log_dir, run_id, f"attempt_{attempt}", str(local_rank), f"{stream}.log")

    def read_lines(self, path):
        self.assertTrue(os.path.isfile(path), f"missing log file {path}; have: {self.tree()}")
        with open(path) as f:
            return f.read().splitlines()

    def tree(self):
        found = []
        for root, _, files in os.walk(self.tmp):
            found += [os.path.relpath(os.path.join(root, f), self.tmp) for f in files]
        return sorted(f for f in found if not f.startswith("pids"))

    def run_two(self, *options):
        log_dir = self.path("logs")
        result = self.gangrun(["--nproc_per_node", 2, "--log_dir", log_dir, *options,
                               *self.fake("--lines", 3, "--stream", "err", "--lines", 2)])
        self.assertExit(result, 0)
        return log_dir, result

    def test_redirect_both_streams_to_files_only(self):
        log_dir, result = self.run_two("--rdzv_id", "myrun", "-r", "3")
        for rank in (0, 1):
            self.assertEqual(self.read_lines(self.log(log_dir, "myrun", 0, rank, "stdout")), worker_lines(rank, 3))
            self.assertEqual(self.read_lines(self.log(log_dir, "myrun", 0, rank, "stderr")), worker_lines(rank, 2))
        self.assertNotIn("rank=", result.stdout + result.stderr, "redirected output reached the console")

    def test_default_run_id_is_none(self):
        log_dir, _ = self.run_two("--redirects", "1")
        for rank in (0, 1):
            self.assertEqual(self.read_lines(self.log(log_dir, "none", 0, rank, "stdout")), worker_lines(rank, 3))

    def test_redirect_stdout_only(self):
        log_dir, result = self.run_two("-r", "1")
        for rank in (0, 1):
            self.assertEqual(self.read_lines(self.log(log_dir, "none", 0, rank, "stdout")), worker_lines(rank, 3))
            self.assertEqual(prefixed_lines(result.stdout, rank), [], "stdout is redirected")
            self.assertEqual(prefixed_lines(result.stderr, rank), worker_lines(rank, 2), "stderr stays on the console")

    def test_redirect_stderr_only(self):
        log_dir, result = self.run_two("-r", "2")
        for rank in (0, 1):
            self.assertEqual(self.read_lines(self.log(log_dir, "none", 0, rank, "stderr")), worker_lines(rank, 2))
            self.assertEqual(prefixed_lines(result.stdout, rank), worker_lines(rank, 3), "stdout stays on the console")
            self.assertEqual(prefixed_lines(result.stderr, rank), [], "stderr is redirected")

    def test_redirect_per_local_rank(self):
        log_dir, result = self.run_two("--redirects", "0:3,1:0")
        self.assertEqual(self.read_lines(self.log(log_dir, "none", 0, 0, "stdout")), worker_lines(0, 3))
        self.assertEqual(self.read_lines(self.log(log_dir, "none", 0, 0, "stderr")), worker_lines(0, 2))
        self.assertEqual(prefixed_lines(result.stdout, 0) + prefixed_lines(result.stderr, 0), [])
        self.assertEqual(prefixed_lines(result.stdout, 1), worker_lines(1, 3))
        self.assertEqual(prefixed_lines(result.stderr, 1), worker_lines(1, 2))

    def test_tee_writes_files_and_console(self):
        for spelling in ("-t", "--tee"):
            with self.subTest(spelling=spelling):
                log_dir, result = self.run_two("--rdzv_id", f"tee{spelling.strip('-')}", spelling, "3")
                for rank in (0, 1):
                    run_id = f"tee{spelling.strip('-')}"
                    self.assertEqual(self.read_lines(self.log(log_dir, run_id, 0, rank, "stdout")), worker_lines(rank, 3))
                    self.assertEqual(self.read_lines(self.log(log_dir, run_id, 0, rank, "stderr")), worker_lines(rank, 2))
                    self.assertEqual(prefixed_lines(result.stdout, rank), worker_lines(rank, 3))
                    self.assertEqual(prefixed_lines(result.stderr, rank), worker_lines(rank, 2))

    def test_error_file_lives_beside_the_logs(self):
        log_dir = self.path("logs")
        result = self.gangrun(["--nproc_per_node", 2, "--log_dir", log_dir, "--rdzv_id", "r1", "-r", "3",
                               *self.fake("--print-env", self.path("env.{rank}.json"))])
        self.assertExit(result, 0)
        for rank in (0, 1):
            env = self.read_json(self.path(f"env.{rank}.json"))["env"]
            expected = os.path.join(log_dir, "r1", "attempt_0", str(rank), "error.json")
            self.assertEqual(os.path.normpath(env.get("TORCHELASTIC_ERROR_FILE", "")), expected)

    def test_every_attempt_gets_its_own_directory(self):
        log_dir = self.path("logs")
        result = self.gangrun(["--nproc_per_node", 2, "--log_dir", log_dir, "--max_restarts", 1, "-r", "3",
                               "--term-timeout", 2,
                               *self.fake("--lines", 2, "--touch", self.path("printed.{rank}.{restart}"),
                                          "--only-rank", 1, "--wait-file", self.path("printed.0.{restart}"), 20,
                                          "--only-rank", 1, "--restart-fail-until", 1,
                                          "--sleep", 0.2)], timeout=60)
        self.assertExit(result, 0)
        for attempt in (0, 1):
            for rank in (0, 1):
                self.assertEqual(self.read_lines(self.log(log_dir, "none", attempt, rank, "stdout")),
                                 worker_lines(rank, 2), f"attempt {attempt} rank {rank}")


class LocalRanksFilter(GangrunTestCase):
    def test_console_shows_only_the_listed_local_ranks(self):
        for spelling in ("--local_ranks_filter", "--local-ranks-filter"):
            with self.subTest(spelling=spelling):
                result = self.gangrun(["--nproc_per_node", 4, spelling, "0,3",
                                       *self.fake("--lines", 2, "--stream", "err", "--lines", 1)])
                self.assertExit(result, 0)
                for rank in range(4):
                    shown = rank in (0, 3)
                    self.assertEqual(prefixed_lines(result.stdout, rank), worker_lines(rank, 2) if shown else [],
                                     f"stdout of rank {rank}")
                    self.assertEqual(prefixed_lines(result.stderr, rank), worker_lines(rank, 1) if shown else [],
                                     f"stderr of rank {rank}")
                self.assertEqual(len(self.pid_files()), 4, "every worker still runs")


if __name__ == "__main__":
    harness.main()
