"""Containment: nothing of the job survives gangrun, gangrun signals nothing outside the job, and a gang
that cannot be started is a normal failure (docs/supervision.md, "Supervision": every worker runs under a
shim that outlives gangrun just long enough to kill its tree)."""

import os
import resource
import shlex
import signal
import subprocess
import time

import harness
from harness import GangrunTestCase

EVERY_WAY_TO_DETACH = ("--spawn-grandchild", "--spawn-setsid-grandchild", "--spawn-daemon")


def job_pids(test):
    """Every process the fake workers said they started: workers, group members, setsid'd and daemons."""
    pids = []
    for stem in ("worker", "grandchild", "setsid_grandchild", "daemon"):
        pids += list(test.pid_files(stem).values())
    return pids


class SigkillOfGangrun(GangrunTestCase):
    def test_nothing_of_the_job_survives_sigkill_of_gangrun(self):
        proc = self.start(["--nproc_per_node", 3, *self.fake(*EVERY_WAY_TO_DETACH, "--touch", self.ready_file(),
                                                                 "--sleep", 60)])
        self.wait_ready(3)
        for stem in ("grandchild", "setsid_grandchild", "daemon"):
            self.wait_pid_files(3, stem)
        pids = job_pids(self)
        self.assertEqual(len(pids), 12, "3 workers, each with a group member, a setsid'd child and a daemon")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.monotonic()
        self.assert_dead(pids, what="processes of the job after SIGKILL to gangrun")
        print(f"all 12 processes gone {time.monotonic() - killed_at:.3f}s after gangrun was killed")

    def test_daemons_of_a_finished_job_are_killed(self):
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(*EVERY_WAY_TO_DETACH, "--exit", 0)])
        self.assertExit(result, 0)
        self.assertEqual(len(self.pid_files("daemon")), 2)
        self.assert_dead(job_pids(self), what="processes of a job that ended")


def take_pid(pid, argv, attempts=2000):
    """Starts ARGV in a new session with exactly PID, through /proc/sys/kernel/ns_last_pid (root only).
    Returns the Popen, or None when the pid could not be had."""
    for _ in range(attempts):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


class PidReuse(GangrunTestCase):
    def test_a_reused_worker_pid_is_never_signalled(self):
        if not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK):
            self.skipTest("needs root to choose the next pid (/proc/sys/kernel/ns_last_pid)")
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 2, "--term-timeout", 5, *self.fake(
            "--only-rank", 0, "--exit", 0,
            "--wait-file", go, 30,
            "--exit", 3)])
        rank0 = self.wait_pid_files(1)[0]
        self.assert_dead([rank0], what="rank 0 (exits at once)")
        harness.wait_for(lambda: not os.path.exists(f"/proc/{rank0}"), harness.EVENT_TIMEOUT,
                         f"rank 0's pid {rank0} to be reaped")
        # An unrelated process now owns rank 0's old pid and leads a process group of that number.
        impostor = take_pid(rank0, ["sleep", "120"])
        if impostor is None:
            self.skipTest(f"could not obtain pid {rank0} for the stand-in process")
        try:
            self.assertEqual(os.getpgid(impostor.pid), rank0)
            with open(go, "w"):
                pass
            result = self.finish(proc)
            self.assertExit(result, 3)
            self.assertIsNone(impostor.poll(), f"gangrun signalled pid {rank0}, which no longer was its worker")
        finally:
            impostor.kill()
            impostor.wait()


def make_pids_cgroup(name):
    """A new cgroup with a pids.max, under cgroup v1's pids hierarchy or cgroup v2; None when none can be made."""
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        group = os.path.join(root, name)
        try:
            os.mkdir(group)
        except OSError:
            continue
        if os.path.exists(os.path.join(group, "pids.max")):
            return group
        os.rmdir(group)
    return None


def remove_when_empty(group):
    """Removes a cgroup of make_pids_cgroup once its last process has gone."""
    def empty():
        with open(os.path.join(group, "cgroup.procs")) as f:
            return f.read().strip() == ""
    harness.wait_for(empty, harness.EVENT_TIMEOUT, "the test cgroup to empty")
    os.rmdir(group)


class StartFailures(GangrunTestCase):
    def assert_start_failure(self, result, reason):
        self.assertExit(result, 4)
        self.assertIn("cannot start", result.stderr)
        self.assertIn(harness.FAKE, result.stderr, "the message does not name the program")
        self.assertIn(reason, result.stderr)
        self.assertNotIn("internal error", result.stderr)
        self.assert_dead(job_pids(self), what="workers and their children after a failed start")

    def test_out_of_descriptors_midway_tears_down_what_started(self):
        def few_descriptors():
            resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))
        argv = [harness.GANGRUN, "--nproc_per_node", 60, *self.fake("--spawn-setsid-grandchild", "--sleep", 60)]
        run = subprocess.run([str(a) for a in argv], preexec_fn=few_descriptors, capture_output=True, text=True,
                             timeout=2 * harness.EVENT_TIMEOUT, env=harness.clean_env(), cwd=self.tmp,
                             start_new_session=True)
        result = harness.Result([str(a) for a in argv], run.returncode, run.stdout, run.stderr, 0)
        started = len(self.pid_files())
        self.assertGreater(started, 0, "the limit left no room for any worker" + result.describe())
        self.assertLess(started, 60, "the limit did not stop the spawning" + result.describe())
        self.assert_start_failure(result, "Too many open files")

    def test_a_low_soft_open_file_limit_is_no_limit_for_gangrun_but_stays_the_workers(self):
        soft_limit, workers = 64, 24  # 24 workers need more than 64 descriptors in gangrun
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 8 * workers:
            self.skipTest(f"the hard open-file limit {hard} is too low to show this")
        out = self.path("limit")
        argv = [harness.GANGRUN, "--nproc_per_node", workers, "--no_python", "bash", "-c", f"ulimit -Sn > {out}.$RANK"]
        run = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=harness.clean_env(),
                             timeout=2 * harness.EVENT_TIMEOUT, cwd=self.tmp, start_new_session=True,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft_limit, hard)))
        self.assertEqual(run.returncode, 0, run.stderr)
        for rank in range(workers):
            with open(f"{out}.{rank}") as f:
                self.assertEqual(f.read().strip(), str(soft_limit), f"rank {rank}'s soft open-file limit")

    def test_out_of_processes_midway_tears_down_what_started(self):
        group = make_pids_cgroup(os.path.basename(self.tmp))
        if group is None:
            self.skipTest("cannot make a cgroup with pids.max to limit the number of processes")
        try:
            limit_file = os.path.join(group, "pids.max")
            with open(limit_file, "w") as f:
                f.write("24")
            argv = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", harness.GANGRUN,
                    "--nproc_per_node", 40, *self.fake("--sleep", 60)]
            run = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                                 timeout=2 * harness.EVENT_TIMEOUT, env=harness.clean_env(), cwd=self.tmp,
                                 start_new_session=True)
            result = harness.Result([str(a) for a in argv], run.returncode, run.stdout, run.stderr, 0)
            self.assertGreater(len(self.pid_files()), 0, result.describe())
            self.assert_start_failure(result, "Resource temporarily unavailable")
        finally:
            remove_when_empty(group)

    def test_no_room_for_the_console_thread_loses_no_output(self):
        # Under each pids limit the run either starts every worker and prints
        # every line, or fails to start one and says so; somewhere in the range
        # the workers fit but gangrun's console writer thread does not.
        group = make_pids_cgroup(os.path.basename(self.tmp))
        if group is None:
            self.skipTest("cannot make a cgroup with pids.max to limit the number of processes")
        try:
            for limit in range(2, 9):
                with open(os.path.join(group, "pids.max"), "w") as f:
                    f.write(str(limit))
                argv = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", harness.GANGRUN,
                        "--nproc_per_node", 2, "--no_python", harness.FAKE, "--lines", 3]
                run = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                                     timeout=harness.EVENT_TIMEOUT, env=harness.clean_env(), cwd=self.tmp,
                                     start_new_session=True)
                result = harness.Result([str(a) for a in argv], run.returncode, run.stdout, run.stderr, 0)
                with self.subTest(pids_max=limit):
                    self.assertNotIn("internal error", result.stderr, result.describe())
                    if run.returncode == 0:
                        for rank in range(2):
                            for line in range(3):
                                self.assertIn(f"rank={rank} line={line} ", result.stdout, result.describe())
                    else:
                        self.assertExit(result, 4)
                        self.assertIn("cannot start", result.stderr)
        finally:
            remove_when_empty(group)

    def test_missing_interpreter_names_it(self):
        script = self.path("no_interpreter")
        with open(script, "w") as f:
            f.write("#!/nonexistent/interpreter-x\necho hi\n")
        os.chmod(script, 0o755)
        result = self.gangrun(["--nproc_per_node", 2, "--no_python", script])
        self.assertExit(result, 127)
        self.assertIn(script, result.stderr)
        self.assertIn("/nonexistent/interpreter-x", result.stderr)
        self.assertNotIn("internal error", result.stderr)

    def test_corrupt_executable_is_126_naming_it(self):
        program = self.path("corrupt")
        with open(program, "wb") as f:
            f.write(b"\x7fELF" + os.urandom(64))
        os.chmod(program, 0o755)
        result = self.gangrun(["--nproc_per_node", 2, "--no_python", program])
        self.assertExit(result, 126)
        self.assertIn(program, result.stderr)
        self.assertIn("Exec format error", result.stderr)


class SignalWhileSpawning(GangrunTestCase):
    def test_sigterm_while_spawning_a_large_gang_stops_the_spawning(self):
        workers = 300
        report = self.path("report.json")
        # sh's pid becomes gangrun's when it execs, so rank 0 can signal gangrun the moment it runs,
        # while gangrun is still starting the others.
        command = [harness.GANGRUN, "--nproc_per_node", workers, "--report", report,
                   *self.fake("--only-rank", 0, "--kill", "$$", "TERM", "--sleep", 60)]
        script = "exec " + " ".join("$$" if word == "$$" else shlex.quote(str(word)) for word in command)
        proc = subprocess.Popen(["sh", "-c", script], env=harness.clean_env(), start_new_session=True, cwd=self.tmp,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._started.append(proc)
        _, err = proc.communicate(timeout=2 * harness.EVENT_TIMEOUT)
        self.assertEqual(proc.returncode, -signal.SIGTERM, err.decode(errors="replace"))
        ranks = harness.report_attempts(self.read_json(report))[-1]
        started = [w["pid"] for w in ranks if w["pid"] > 0]
        self.assertLess(len(started), workers, "gangrun kept spawning after SIGTERM")
        for worker in ranks:
            if worker["pid"] <= 0:
                self.assertIsNone(worker["exit_code"], f"rank {worker['rank']} never ran but has an exit code")
        self.assert_dead(started, what="workers started before SIGTERM")
        print(f"{len(started)} of {workers} workers had started when SIGTERM stopped the spawning")


if __name__ == "__main__":
    harness.main()
