"""Every row of the exit-code table (docs/supervision.md, "Exit codes"; lib/util/exit_codes.hpp).

The row "gangrun stopped by signal S" is covered by test_signals.py.
"""

import os
import signal
import socket

import harness
from harness import GangrunTestCase


class WorkerOutcomes(GangrunTestCase):
    def test_all_workers_exit_zero(self):
        result = self.gangrun(["--nproc_per_node", 3, *self.fake("--exit", 0)])
        self.assertExit(result, 0)
        self.assertEqual(len(self.pid_files()), 3)

    def test_single_worker_exit_code_is_returned(self):
        self.assertExit(self.gangrun([*self.fake("--exit", 7)]), 7)

    def test_exit_255(self):
        self.assertExit(self.gangrun(["--nproc_per_node", 2, *self.fake("--only-rank", 1, "--exit", 255, "--sleep", 30)]), 255)

    def test_root_cause_exit_code_with_others_torn_down(self):
        # The others are stopped by gangrun (SIGTERM -> 143): that must not be the answer.
        # They would sleep far longer than the test waits, so they must have been stopped.
        # rank 1 fails once the others note SIGTERM.
        result = self.gangrun(["--nproc_per_node", 3, "--term-timeout", 600, *self.fake(
            "--on-term", self.path("term.{rank}"),
            "--touch", self.ready_file(),
            "--only-rank", 1, "--wait-file", self.path("ready.0"), 300,
            "--only-rank", 1, "--wait-file", self.path("ready.2"), 300,
            "--only-rank", 1, "--exit", 3,
            "--sleep", 600)])
        self.assertExit(result, 3)
        for rank in (0, 2):
            self.assertTrue(os.path.exists(self.path(f"term.{rank}")), f"rank {rank} was not sent SIGTERM")

    def test_first_failure_wins_over_later_failures(self):
        # rank 1 fails with 9 as soon as rank 0 ignores SIGTERM; rank 0 fails with 5 only
        # once the SIGTERM of the teardown reached it, inside the grace period.
        ready0 = self.path("rank0-ignores-term")
        term0 = self.path("rank0-got-term")
        result = self.gangrun(["--nproc_per_node", 3, "--term-timeout", 600, *self.fake(
            "--only-rank", 0, "--ignore-term",
            "--only-rank", 0, "--on-term", term0,
            "--only-rank", 0, "--touch", ready0,
            "--only-rank", 1, "--wait-file", ready0, 300,
            "--only-rank", 1, "--exit", 9,
            "--only-rank", 0, "--wait-file", term0, 300,
            "--only-rank", 0, "--exit", 5,
            "--sleep", 600)])
        self.assertExit(result, 9)
        self.assertTrue(os.path.exists(term0), "rank 0 failed before the teardown reached it")

    def test_killed_by_signal_gives_128_plus_signal(self):
        for sig, name in ((signal.SIGKILL, "KILL"), (signal.SIGALRM, "ALRM"), (signal.SIGTERM, "TERM")):
            with self.subTest(signal=name):
                result = self.gangrun(["--nproc_per_node", 2, "--term-timeout", 2,
                                       *self.fake("--only-rank", 1, "--signal", name, "--sleep", 30)])
                self.assertExit(result, 128 + int(sig))

    def test_single_worker_killed_by_signal(self):
        self.assertExit(self.gangrun([*self.fake("--signal", "ALRM")]), 128 + int(signal.SIGALRM))


class LauncherOutcomes(GangrunTestCase):
    def test_usage_error_is_2_and_starts_nothing(self):
        result = self.gangrun(["--nproc_per_node", 0, *self.fake("--exit", 0)])
        self.assertExit(result, 2)
        self.assert_nothing_started()

    def test_program_not_executable_is_126(self):
        program = self.path("not-executable")
        with open(program, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(program, 0o644)
        result = self.gangrun(["--nproc_per_node", 2, "--no_python", program])
        self.assertExit(result, 126)
        self.assertIn(program, result.stderr, "the message should name the program")

    def test_program_not_found_is_127_and_names_the_path(self):
        program = self.path("no", "such", "program")
        result = self.gangrun(["--nproc_per_node", 2, "--no_python", program])
        self.assertExit(result, 127)
        self.assertIn(program, result.stderr)

    def test_program_not_on_path_is_127(self):
        result = self.gangrun(["gangrun-test-no-such-program-4711", "arg"])
        self.assertExit(result, 127)
        self.assertIn("gangrun-test-no-such-program-4711", result.stderr)

    def test_interpreter_not_found_is_127(self):
        script = self.path("script.py")
        with open(script, "w") as f:
            f.write("print('hello')\n")
        python = self.path("no", "python3")
        result = self.gangrun(["--python", python, script])
        self.assertExit(result, 127)
        self.assertIn(python, result.stderr)

    def test_hang_is_5_and_stops_the_gang(self):
        # No worker prints a line for --hang_timeout seconds: the gang is stopped (the
        # default --on_hang stop), whatever the workers' own exit codes then are.
        result = self.gangrun(["--nproc_per_node", 2, "--hang_timeout", 1, *self.fake("--sleep", 600)])
        self.assertExit(result, 5)
        self.assertEqual(len(self.pid_files()), 2)
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_a_failed_preflight_is_6_and_the_job_never_starts(self):
        # --preflight's worker runs under an interpreter that cannot import torch (-S: no
        # site-packages): the torch check fails, and the job itself is not started.
        python = self.path("python-without-site")
        with open(python, "w") as f:
            f.write(f"#!/bin/sh\nexec {harness.TEST_PYTHON} -S \"$@\"\n")
        os.chmod(python, 0o700)
        result = self.gangrun(["--preflight", "--python", python, "--nproc_per_node", 2, *self.fake("--exit", 0)],
                              timeout=4 * harness.EVENT_TIMEOUT)
        self.assertExit(result, 6)
        self.assertIn("cannot import torch", result.stdout)
        self.assert_nothing_started()

    def test_store_port_in_use_is_3_and_starts_nothing(self):
        # gangrun hosts the store on MASTER_ADDR:MASTER_PORT; a port
        # that is already taken on loopback is a store failure.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen(1)
            port = busy.getsockname()[1]
            result = self.gangrun(["--nproc_per_node", 2, "--master_addr", "127.0.0.1", "--master_port", port,
                                   *self.fake("--exit", 0)])
        self.assertExit(result, 3)
        self.assertIn(str(port), result.stderr, "the message should name the port")
        self.assert_nothing_started()


if __name__ == "__main__":
    harness.main()
