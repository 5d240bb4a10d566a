"""Per-worker log files, redirects, tee and the console filter (docs/supervision.md, "Output").

Assumption (torchrun's behaviour): the log files hold the worker's raw output, without the
console prefix.
"""

import os
import subprocess

import harness
from harness import GangrunTestCase, prefixed_lines

PAD = "x" * 32


def worker_lines(rank, count):
    return [f"rank={rank} line={i} {PAD}" for i in range(count)]


class LogDir(GangrunTestCase):
    def run_dirs(self, log_dir, prefix):
        """The run directories gangrun made in LOG_DIR for a run id that PREFIX starts."""
        return sorted(os.path.join(log_dir, name) for name in os.listdir(log_dir) if name.startswith(prefix))

    def run_dir(self, log_dir, run_id):
        """The one directory <run_id>_<unique> that a run made in LOG_DIR."""
        found = self.run_dirs(log_dir, run_id + "_")
        self.assertEqual(len(found), 1, f"expected one run directory for {run_id!r}; have: {self.tree()}")
        return found[0]

    def log(self, log_dir, run_id, attempt, local_rank, stream):
        return os.path.join(self.run_dir(log_dir, run_id), f"attempt_{attempt}", str(local_rank), f"{stream}.log")

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
            expected = os.path.join(self.run_dir(log_dir, "r1"), "attempt_0", str(rank), "error.json")
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


    def test_a_second_run_keeps_the_first_runs_logs(self):
        log_dir = self.path("logs")
        for word in ("first", "second"):
            result = self.gangrun(["--nproc_per_node", 2, "--log_dir", log_dir, "--rdzv_id", "same", "-r", "3",
                                   *self.fake("--echo", word)])
            self.assertExit(result, 0)
            self.assertIn(f"logs of this run: {log_dir}/same_", result.stderr)
        runs = self.run_dirs(log_dir, "same_")
        self.assertEqual(len(runs), 2, self.tree())
        words = set()
        for run in runs:
            for rank in (0, 1):
                with open(os.path.join(run, "attempt_0", str(rank), "stdout.log")) as f:
                    words.add(f.read().strip())
        self.assertEqual(words, {"first", "second"})

    def test_run_ids_never_reach_outside_the_log_dir(self):
        log_dir = self.path("logs")
        victim = self.path("victim", "attempt_0", "0")
        os.makedirs(victim)
        with open(os.path.join(victim, "keep.txt"), "w") as f:
            f.write("precious")
        for run_id in ("../victim", "a/b", "..", "/etc", "."):
            with self.subTest(run_id=run_id):
                result = self.gangrun(["--nproc_per_node", 2, "--log_dir", log_dir, "--rdzv_id", run_id, "-r", "3",
                                       *self.fake("--print-env", self.path("env.{rank}.json"))])
                self.assertExit(result, 0)
                env = self.read_json(self.path("env.0.json"))["env"]
                self.assertEqual(env["TORCHELASTIC_RUN_ID"], run_id)
                error_file = os.path.realpath(env["TORCHELASTIC_ERROR_FILE"])
                self.assertTrue(error_file.startswith(os.path.realpath(log_dir) + os.sep), error_file)
        with open(os.path.join(victim, "keep.txt")) as f:
            self.assertEqual(f.read(), "precious")
        outside = [f for f in self.tree() if not f.startswith(("logs/", "victim/", "env.", "gangrun."))]
        self.assertEqual(outside, [], "files written outside --log_dir")


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


class FullLogDisk(GangrunTestCase):
    """A --log_dir on a full filesystem: every log that lost bytes is named at once, and the
    console still gets everything. The filesystem is a real one: a 64 KiB tmpfs mounted on
    the log directory in a private mount namespace (needs root or user namespaces)."""

    LINES = 20000  # about 1 MB per worker

    def test_a_full_disk_is_reported_and_the_console_keeps_everything(self):
        log_dir = self.path("logs")
        copy = self.path("copy")  # the tmpfs goes with the namespace; its files are copied out
        os.mkdir(log_dir)
        mount = harness.private_tmpfs_mount(self, log_dir, "gangrun-test-logs")

        script = (f'{mount} || exit 99; logs=$1; copy=$2; shift 2; "$@"; status=$?; '
                  'cp -r "$logs" "$copy" || exit 98; exit $status')
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", log_dir, copy,
                harness.GANGRUN, "--nproc_per_node", 2, "--log_dir", log_dir, "--rdzv_id", "full", "--tee", 3,
                *self.fake("--lines", self.LINES)]
        argv = [str(a) for a in argv]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=harness.clean_env(), start_new_session=True, cwd=self.tmp)
        self._started.append(proc)
        out, err = proc.communicate(timeout=120)
        result = harness.Result(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), 0)
        self.assertNotIn(result.returncode, (98, 99), "the test's own mount or copy failed" + result.describe())

        logs = {}
        for root, _, files in os.walk(copy):
            for name in files:
                if name == "stdout.log":
                    with open(os.path.join(root, name)) as f:
                        logs[os.path.relpath(os.path.join(root, name), copy)] = f.read()
        self.assertEqual(len(logs), 2, f"expected two stdout.log files, found {sorted(logs)}" + result.describe())
        for rank in (0, 1):
            self.assertEqual(prefixed_lines(result.stdout, rank), worker_lines(rank, self.LINES),
                             f"the console lost lines of rank {rank}")
        warnings = [line for line in result.stderr.splitlines() if "cannot write log file" in line]
        wholes = ["".join(line + "\n" for line in worker_lines(rank, self.LINES)) for rank in (0, 1)]
        for path, text in logs.items():
            named = [line for line in warnings if os.path.join(log_dir, path) in line]
            self.assertEqual(len(named), 1, f"want one warning naming {path}" + result.describe())
            self.assertIn("No space left on device", named[0])
            # What was written is a true prefix of the worker's output, and less than all of it.
            self.assertLess(len(text), len(wholes[0]), f"{path} holds everything on a 64 KiB disk")
            self.assertTrue(any(whole.startswith(text) for whole in wholes),
                            f"{path} is not a prefix of a worker's output: {text[:100]!r}...{text[-100:]!r}")


if __name__ == "__main__":
    harness.main()
