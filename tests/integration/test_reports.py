"""Failure reports (docs/supervision.md, "When a worker fails"): the root-cause block on stderr, the worker's
TORCHELASTIC_ERROR_FILE (fake and real torch @record), the copy into gangrun's own
TORCHELASTIC_ERROR_FILE, and the --report JSON (schema in harness.py)."""

import json
import os
import socket

import harness
from harness import GangrunTestCase, TEST_PYTHON


class FailureBlock(GangrunTestCase):
    def _fail_rank_2(self, *failing_actions, extra=()):
        """3 workers; rank 2 runs FAILING_ACTIONS once everyone is ready; the others sleep."""
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 3, "--term-timeout", 2, *extra, *self.fake(
            "--touch", self.ready_file(),
            "--only-rank", 2, "--wait-file", go, 20,
            *failing_actions,
            "--sleep", 30)])
        self.wait_ready(3)
        pids = self.pid_files()
        with open(go, "w"):
            pass
        return self.finish(proc), pids

    def test_block_names_rank_local_rank_pid_and_exit_code(self):
        # The failing worker prints nothing, so whatever names it on the console is the report.
        result, pids = self._fail_rank_2("--only-rank", 2, "--exit", 42)
        self.assertExit(result, 42)
        err = result.stderr
        self.assertRegex(err, r"(?i)\brank\W{0,12}2\b", "the report should name rank 2")
        self.assertRegex(err, r"(?i)local[_ ]rank\W{0,12}2\b", "the report should name local rank 2")
        self.assertRegex(err, rf"\b{pids[2]}\b", "the report should name the pid of the root cause")
        self.assertRegex(err, r"(?i)exit[^\n]*\b42\b", "the report should give the exit code")
        self.assertIn(socket.gethostname().split(".")[0], err, "the report should name the host")
        for rank in (0, 1):
            self.assertRegex(err, rf"\b{pids[rank]}\b", f"the report should have a line for rank {rank} (stopped by gangrun)")

    def test_block_names_the_signal(self):
        result, pids = self._fail_rank_2("--only-rank", 2, "--signal", "ALRM")
        self.assertExit(result, 128 + 14)
        self.assertIn("SIGALRM", result.stderr)
        self.assertRegex(result.stderr, rf"\b{pids[2]}\b")

    def test_block_quotes_the_last_output_lines(self):
        result, _ = self._fail_rank_2(
            "--only-rank", 2, "--echo", "last-words-{rank}-out",
            "--only-rank", 2, "--stream", "err",
            "--only-rank", 2, "--echo", "last-words-{rank}-err",
            "--only-rank", 2, "--exit", 1)
        self.assertExit(result, 1)
        console = result.stdout + result.stderr
        for marker in ("last-words-2-out", "last-words-2-err"):
            # once as the worker's own prefixed line, once more in the report's tail
            self.assertGreaterEqual(console.count(marker), 2, f"{marker} is not quoted in the report" + result.describe())

    def test_error_file_message_from_fake_worker(self):
        # {rank} is expanded by the worker, so the text appears nowhere in any command line.
        marker = "FakeError: written-only-to-the-error-file-of-rank-{rank}"
        result, _ = self._fail_rank_2("--only-rank", 2, "--write-error-file", marker, "--only-rank", 2, "--exit", 1)
        self.assertExit(result, 1)
        self.assertIn("FakeError: written-only-to-the-error-file-of-rank-2", result.stderr)

    def test_root_cause_is_copied_to_gangrun_error_file(self):
        launcher_file = self.path("launcher-error.json")
        marker = "FakeError: copied-to-launcher-file-5521"
        env = harness.clean_env(TORCHELASTIC_ERROR_FILE=launcher_file)
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 2, *self.fake(
            "--print-env", self.path("env.{rank}.json"),
            "--only-rank", 1, "--wait-file", self.path("env.0.json"), 20,
            "--only-rank", 1, "--write-error-file", marker,
            "--only-rank", 1, "--exit", 1,
            "--sleep", 30)], env=env)
        self.assertExit(result, 1)
        for rank in (0, 1):
            worker_file = self.read_json(self.path(f"env.{rank}.json"))["env"].get("TORCHELASTIC_ERROR_FILE")
            self.assertNotEqual(worker_file, launcher_file, "workers need their own error files")
        self.assertTrue(os.path.isfile(launcher_file), "the root cause was not copied to gangrun's TORCHELASTIC_ERROR_FILE")
        with open(launcher_file) as f:
            doc = json.load(f)
        self.assertIn("copied-to-launcher-file-5521", json.dumps(doc))
        self.assertIn("copied-to-launcher-file-5521", doc["message"]["message"])


class TorchRecord(GangrunTestCase):
    def test_error_file_message_from_real_torch_record(self):
        harness.require_torch()
        marker = "torch-record-marker-3307"
        script = os.path.join(harness.HERE, "torch_record_worker.py")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 2, "--python", TEST_PYTHON,
                               script, self.pid_dir, marker, 1], timeout=120)
        self.assertExit(result, 1)
        self.assertIn(f"{marker} raised by rank 1", result.stderr,
                      "the message @record wrote is missing from the report")
        self.assertIn("RuntimeError", result.stderr)


class JsonReport(GangrunTestCase):
    def test_report_of_a_failed_run(self):
        report = self.path("report.json")
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 3, "--term-timeout", 2, "--report", report, *self.fake(
            "--only-rank", 0, "--alloc-mb", 64,
            "--touch", self.ready_file(),
            "--only-rank", 1, "--wait-file", go, 20,
            "--only-rank", 1, "--exit", 3,
            "--sleep", 30)])
        self.wait_ready(3)
        pids = self.pid_files()
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 3)
        self.assertTrue(os.path.isfile(report), "--report wrote nothing" + result.describe())
        doc = self.read_json(report)

        root = harness.report_root_cause(doc)
        self.assertTrue(root, f"no root cause in {json.dumps(doc)[:600]}")
        self.assertEqual(int(root["rank"]), 1)

        attempts = harness.report_attempts(doc)
        self.assertEqual(len(attempts), 1)
        workers = {int(w["rank"]): w for w in attempts[0]}
        self.assertEqual(sorted(workers), [0, 1, 2])
        for rank, worker in workers.items():
            self.assertEqual(int(worker["pid"]), pids[rank], f"pid of rank {rank}")
            self.assertEqual(int(worker["local_rank"]), rank)
            self.assertIsNotNone(worker["start"])
            self.assertIsNotNone(worker["end"])
        self.assertEqual(workers[1]["exit_code"], 3)
        for rank in (0, 2):
            self.assertIn(workers[rank]["signal"], (15, "SIGTERM", "TERM"), f"rank {rank} was stopped by gangrun")
        peak = float(workers[0]["peak_rss"]) * harness.REPORT_PEAK_RSS_BYTES_PER_UNIT
        self.assertGreaterEqual(peak, 64 * 1024 * 1024, "peak RSS of rank 0 (allocated 64 MiB)")
        self.assertEqual(harness.report_restarts(doc), 0)

    def test_report_of_a_successful_run(self):
        report = self.path("report.json")
        result = self.gangrun(["--nproc_per_node", 2, "--report", report, *self.fake("--exit", 0)])
        self.assertExit(result, 0)
        doc = self.read_json(report)
        self.assertFalse(harness.report_root_cause(doc), "a successful run has no root cause")
        workers = harness.report_attempts(doc)[-1]
        pids = self.pid_files()
        self.assertEqual(sorted(int(w["pid"]) for w in workers), sorted(pids.values()))
        self.assertTrue(all(w["exit_code"] == 0 for w in workers), workers)
        self.assertEqual(harness.report_restarts(doc), 0)

    def test_report_counts_restarts(self):
        report = self.path("report.json")
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 1, "--term-timeout", 2, "--report", report,
                               *self.fake("--only-rank", 1, "--exit", 6, "--sleep", 30)], timeout=60)
        self.assertExit(result, 6)
        doc = self.read_json(report)
        self.assertEqual(harness.report_restarts(doc), 1)
        self.assertEqual(int(harness.report_root_cause(doc)["rank"]), 1)
        self.assertEqual(len(harness.report_attempts(doc)), 2 if harness.REPORT_ATTEMPTS_KEY in doc else 1)


class ReportKeepsRootCause(GangrunTestCase):
    def test_report_holds_message_and_traceback_and_no_deleted_path(self):
        report = self.path("report.json")
        marker = "FakeError: kept-in-the-report-{rank}"
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 5, "--report", report, *self.fake(
            "--only-rank", 1, "--write-error-file", marker,
            "--only-rank", 1, "--exit", 5,
            "--sleep", 30)])
        self.assertExit(result, 5)
        doc = self.read_json(report)
        root = harness.report_root_cause(doc)
        self.assertEqual(int(root["rank"]), 1)
        error = root[harness.REPORT_ERROR_KEY]
        self.assertIsNotNone(error, json.dumps(root))
        self.assertIn("kept-in-the-report-1", error["message"])
        self.assertIn("kept-in-the-report-1", result.stderr, "the summary should show the same message")
        # Without --log_dir the run directory is gone: no worker may point into it.
        for attempt in doc[harness.REPORT_ATTEMPTS_KEY]:
            for worker in attempt[harness.REPORT_WORKERS_KEY]:
                path = worker.get(harness.REPORT_ERROR_FILE_KEY)
                self.assertTrue(path is None or os.path.exists(path), f"error_file {path!r} does not exist")
        self.assertIsNone(root.get(harness.REPORT_ERROR_FILE_KEY))

    def test_report_with_log_dir_points_at_the_kept_error_file(self):
        report = self.path("report.json")
        log_dir = self.path("logs")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 5, "--log_dir", log_dir, "--rdzv_id", "r9",
                               "--report", report, *self.fake(
                                   "--only-rank", 0, "--write-error-file", "FakeError: on-disk-{rank}",
                                   "--only-rank", 0, "--exit", 4,
                                   "--sleep", 30)])
        self.assertExit(result, 4)
        root = harness.report_root_cause(self.read_json(report))
        path = root[harness.REPORT_ERROR_FILE_KEY]
        self.assertTrue(path.startswith(log_dir + os.sep), path)
        self.assertTrue(path.endswith(os.path.join("attempt_0", "0", "error.json")), path)
        self.assertTrue(os.path.isfile(path), f"{path} does not exist after the run")
        self.assertIn("on-disk-0", root[harness.REPORT_ERROR_KEY]["message"])
        # Both the report and the summary say where this run's logs are.
        run_dir = self.read_json(report)["log_dir"]
        self.assertEqual(os.path.dirname(run_dir), log_dir)
        self.assertTrue(os.path.basename(run_dir).startswith("r9_"), run_dir)
        self.assertTrue(path.startswith(run_dir + os.sep), path)
        self.assertIn(f"Logs of this run: {run_dir}", result.stderr)

    def test_real_torch_traceback_in_the_report(self):
        harness.require_torch()
        report = self.path("report.json")
        marker = "torch-record-marker-8812"
        script = os.path.join(harness.HERE, "torch_record_worker.py")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 2, "--python", TEST_PYTHON,
                               "--report", report, script, self.pid_dir, marker, 1], timeout=120)
        self.assertExit(result, 1)
        error = harness.report_root_cause(self.read_json(report))[harness.REPORT_ERROR_KEY]
        self.assertIn(f"{marker} raised by rank 1", error["message"])
        self.assertIn("Traceback", error["traceback"] or "")


class NotUtf8(GangrunTestCase):
    BAD = os.fsdecode(b"\xff")  # passed to the child as the single byte 0xff

    def test_report_of_a_run_with_a_non_utf8_argument(self):
        # Writing the report used to throw (type_error.316): exit 1 instead of 7, no report.
        report = self.path("report.json")
        result = self.gangrun(["--report", report, *self.fake("--exit", 7, "--", self.BAD)])
        self.assertExit(result, 7)
        self.assertNotIn("internal error", result.stderr, result.describe())
        with open(report, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))  # strict UTF-8: valid JSON text
        self.assertIn("\ufffd", json.dumps(doc["plan"], ensure_ascii=False))

    def test_dry_run_json_with_a_non_utf8_argument(self):
        result = self.gangrun(["--dry-run", "--json", *self.fake("--exit", 7, "--", self.BAD)], binary_output=True)
        self.assertExit(result, 0)
        doc = json.loads(result.stdout.decode("utf-8"))
        workers = harness.dry_run_workers(doc)
        self.assertEqual(workers[0]["argv"][-1], "\ufffd")


class HowWorkersEnded(GangrunTestCase):
    def test_worker_that_outlives_sigterm_and_exits_on_its_own(self):
        report = self.path("report.json")
        term = self.path("term.{rank}")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 20, "--report", report, *self.fake(
            "--only-rank", 0, "--ignore-term",
            "--only-rank", 0, "--on-term", term,
            "--touch", self.ready_file(),
            "--only-rank", 0, "--wait-file", term, 20,
            "--only-rank", 0, "--exit", 2,
            "--only-rank", 1, "--wait-file", self.path("ready.0"), 20,
            "--only-rank", 1, "--exit", 3)])
        self.assertExit(result, 3)
        self.assertRegex(result.stderr, r"rank 0 \(local_rank 0, pid \d+\): exited with 2 after gangrun's SIGTERM")
        self.assertNotIn("stopped by gangrun", result.stderr, result.describe())
        worker = {w["rank"]: w for w in self.read_json(report)["attempts"][0]["workers"]}[0]
        self.assertEqual(worker["exit_code"], 2)
        self.assertTrue(worker["stopped_by_gangrun"])
        self.assertEqual(worker[harness.REPORT_ENDED_KEY], "exited with 2 after gangrun's SIGTERM")

    def test_worker_killed_after_term_timeout(self):
        report = self.path("report.json")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 0.5, "--report", report, *self.fake(
            "--only-rank", 0, "--ignore-term",
            "--touch", self.ready_file(),
            "--only-rank", 0, "--sleep", 60,
            "--only-rank", 1, "--wait-file", self.path("ready.0"), 20,
            "--only-rank", 1, "--exit", 3)])
        self.assertExit(result, 3)
        self.assertIn("killed by SIGKILL after --term-timeout", result.stderr, result.describe())
        worker = {w["rank"]: w for w in self.read_json(report)["attempts"][0]["workers"]}[0]
        self.assertEqual(worker["signal"], "SIGKILL")
        self.assertTrue(worker[harness.REPORT_ENDED_KEY].startswith("killed by SIGKILL after --term-timeout"))

    def test_worker_stopped_by_sigterm(self):
        report = self.path("report.json")
        result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 20, "--report", report, *self.fake(
            "--touch", self.ready_file(),
            "--only-rank", 0, "--sleep", 60,
            "--only-rank", 1, "--wait-file", self.path("ready.0"), 20,
            "--only-rank", 1, "--exit", 3)])
        self.assertExit(result, 3)
        self.assertRegex(result.stderr, r"rank 0 \(local_rank 0, pid \d+\): stopped by gangrun \(SIGTERM\)")
        worker = {w["rank"]: w for w in self.read_json(report)["attempts"][0]["workers"]}[0]
        self.assertEqual(worker[harness.REPORT_ENDED_KEY], "stopped by gangrun (SIGTERM)")


if __name__ == "__main__":
    harness.main()
