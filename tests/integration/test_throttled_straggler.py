"""A rank slowed from outside is a straggler (docs/hangs.md, "Stragglers"): held to a small share
of a CPU by cpulimit, or stopped and continued in turn (SIGSTOP for 0.8 s of every second, what a
cgroup's CPU quota or a preempting scheduler does), it computes the same backward pass as the
others, so its frames read like theirs: it is the /proc state the watch reads with each sample
(stopped, or running, while the others sleep in the gradients' all-reduce) that names it. The
balanced run of the same job names no one.

Real PyTorch gloo on CPU (GANGRUN_TEST_PYTHON, and 2.x as integration.test_throttled_straggler.torch2):
4 ranks of hang_doctor_worker.py's compute mode, a DDP model whose step is CPU work and no sleep.
The throttled runs go until the test creates the stop file, which it does once gangrun has named
a straggler (or the wait for that line ran out); the ranks then leave together. The balanced run
is bounded by its 250 steps. The limit is 5% of a CPU, not the 15% of a report from a roomier
machine: on a loaded 2-core machine each of the 4 ranks gets only 15-20% of a CPU anyway, and a
15% limit hardly slows rank 1 (measured: it then waits on the others half the time). cpulimit and the stopping thread are the test's own, ended (and
rank 1 continued) before anything is checked. Needs the py-spy beside GANGRUN_TEST_PEER_PYTHON
and Debian's cpulimit, and skips without them.
"""

import os
import shutil
import signal
import subprocess
import threading

import harness
from harness import EVENT_TIMEOUT, TEST_PYTHON
from test_hang_doctor import JOB_TIMEOUT, SCRIPT, HangTestCase, py_spy

WORLD = 4
SLOW_RANK = 1
SAMPLE_EVERY = 0.2
CPU_LIMIT_PCT = 5
STOPPED_S, RUNNING_S = 0.8, 0.2
# Long enough for a slowed rank to be named on a loaded machine (under 30 samples, at most a
# minute, were measured), short enough that a failure still fits the test's time.
NAMED_WITHIN = 2 * EVENT_TIMEOUT


class ThrottledStraggler(HangTestCase):
    def setUp(self):
        harness.require_torch()
        self.py_spy = py_spy()
        super().setUp()
        self.stop_file = self.path("stop")

    def output_of(self, proc):
        with open(self.path(f"gangrun.{proc.index}.out"), errors="replace") as f:
            return f.read() + self.stderr_of(proc)

    def start_job(self, until_stopped):
        return self.start([f"--straggler-watch={SAMPLE_EVERY}", "--stack-tool", self.py_spy, "--report", self.report,
                           "--nproc-per-node", WORLD, "--python", TEST_PYTHON, SCRIPT, self.pid_dir, "compute",
                           *([self.stop_file] if until_stopped else [])])

    def slow_rank_pid(self, gangrun):
        """Rank 1's pid, once rank 0 has taken its first step (every rank is in the loop)."""
        harness.wait_for(lambda: "rank 0: step 1" in self.output_of(gangrun) or gangrun.poll() is not None,
                         JOB_TIMEOUT, "the first step")
        self.assertIsNone(gangrun.poll(), "gangrun ended before its first step" + self.output_of(gangrun))
        pid = self.pid_files()[SLOW_RANK]
        self.assertIn(self.tmp, harness.proc_cmdline(pid), f"pid {pid} is not a worker of this test")
        self.addCleanup(self.continue_worker, pid)
        return pid

    def continue_worker(self, pid):
        if not harness.is_dead(pid) and self.tmp in harness.proc_cmdline(pid):
            os.kill(pid, signal.SIGCONT)

    def named_while_slowed(self, gangrun, pid, end_slowing):
        """Waits for gangrun to name a straggler (or for the bound), ends the slowing, continues
        rank 1, lets the ranks finish, and returns the report's straggler_watch and the lines
        that name a straggler."""
        try:
            harness.wait_for(lambda: "straggler: " in self.stderr_of(gangrun) or gangrun.poll() is not None,
                             NAMED_WITHIN, "a straggler to be named")
        except AssertionError:
            pass  # the checks below say what was seen
        finally:
            end_slowing()
            self.continue_worker(pid)
            open(self.stop_file, "w").close()
        result = self.finish(gangrun, timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        return self.watched(result)

    def watched(self, result):
        watch = self.read_json(self.report)["attempts"][-1]["straggler_watch"]
        self.assertEqual({entry["rank"] for entry in watch["ranks"]}, set(range(WORLD)), watch)
        named = [line for line in self.console(result).splitlines() if "straggler: " in line]
        return watch, named

    def assert_slow_rank_named(self, watch, named):
        self.assertEqual(len(named), 1, f"{named}\n{watch}")
        self.assertIn(f"rank {SLOW_RANK} (", named[0])
        self.assertIn(SLOW_RANK, watch["stragglers"], watch)
        self.assertEqual(watch["stragglers"], [SLOW_RANK], watch)
        by_rank = {entry["rank"]: entry for entry in watch["ranks"]}
        others = [by_rank[rank] for rank in range(WORLD) if rank != SLOW_RANK]
        # What named it: stopped where the others were not, and waiting asleep far less.
        self.assertGreater(by_rank[SLOW_RANK]["stopped_pct"], max(o["stopped_pct"] for o in others), watch)
        self.assertLess(by_rank[SLOW_RANK]["waiting_pct"], min(o["waiting_pct"] for o in others), watch)

    def test_a_rank_held_to_a_share_of_a_cpu_is_named(self):
        cpulimit = shutil.which("cpulimit")
        if not cpulimit:
            self.skipTest("no cpulimit on PATH (Debian's cpulimit; scripts/install-deps installs it)")
        gangrun = self.start_job(until_stopped=True)
        pid = self.slow_rank_pid(gangrun)
        # --lazy: it leaves when rank 1 does; on its SIGTERM it continues rank 1.
        limiter = subprocess.Popen([cpulimit, "--lazy", "--limit", str(CPU_LIMIT_PCT), "--pid", str(pid)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)

        def end_limiter():
            if limiter.poll() is None:
                limiter.send_signal(signal.SIGTERM)
            limiter.wait(timeout=30)

        self.addCleanup(end_limiter)
        self.assert_slow_rank_named(*self.named_while_slowed(gangrun, pid, end_limiter))

    def test_a_rank_stopped_and_continued_in_turn_is_named(self):
        gangrun = self.start_job(until_stopped=True)
        pid = self.slow_rank_pid(gangrun)
        done = threading.Event()

        def stop_and_continue():
            while not done.is_set():
                os.kill(pid, signal.SIGSTOP)
                done.wait(STOPPED_S)
                os.kill(pid, signal.SIGCONT)
                done.wait(RUNNING_S)

        cycler = threading.Thread(target=stop_and_continue, daemon=True)
        cycler.start()

        def end_cycler():
            done.set()
            cycler.join()

        self.addCleanup(end_cycler)
        self.assert_slow_rank_named(*self.named_while_slowed(gangrun, pid, end_cycler))

    def test_the_balanced_run_names_no_one(self):
        gangrun = self.start_job(until_stopped=False)
        result = self.finish(gangrun, timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        watch, named = self.watched(result)
        self.assertEqual(named, [], watch)
        self.assertEqual(watch["stragglers"], [], watch)
        self.assertGreaterEqual(watch["samples"], 10, watch)


if __name__ == "__main__":
    harness.main()
