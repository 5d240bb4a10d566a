"""Signals sent to gangrun itself (docs/supervision.md, "Supervision"): TERM/INT/HUP tear the job down and
gangrun dies of the same signal; USR1/USR2 are forwarded and the job goes on; a second
TERM/INT during the grace period kills at once; SIGKILL to gangrun still kills its workers; a
worker stopped from outside ends with the teardown's signal at once and stays stopped through a
forwarded one."""

import os
import signal
import time

import harness
from harness import GangrunTestCase


class StopSignals(GangrunTestCase):
    def _start_sleepers(self, count, *extra_actions, term_timeout=5):
        proc = self.start(["--nproc_per_node", count, "--term-timeout", term_timeout, *self.fake(
            *extra_actions, "--touch", self.ready_file(), "--sleep", 60)])
        self.wait_ready(count)
        pids = self.pid_files()
        self.assertEqual(sorted(pids), list(range(count)))
        return proc, pids

    def test_term_int_hup_stop_the_job_and_gangrun_dies_of_the_signal(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                for name in os.listdir(self.tmp):
                    if name.startswith(("ready.", "got.")):
                        os.unlink(self.path(name))
                label = sig.name[3:]
                proc, pids = self._start_sleepers(3, "--on-signal", label, self.path("got.{rank}"))
                os.kill(proc.pid, sig)
                result = self.finish(proc)
                self.assertEqual(result.returncode, -int(sig),
                                 f"gangrun should re-raise {sig.name} (a shell shows {128 + int(sig)})" + result.describe())
                for rank in range(3):
                    path = self.path(f"got.{rank}")
                    self.assertTrue(os.path.exists(path), f"{sig.name} was not forwarded to rank {rank}")
                    with open(path) as f:
                        self.assertEqual(f.read().split()[0], label.lower())
                self.assert_dead(pids.values(), what=f"workers after {sig.name} to gangrun")

    def test_single_worker_term(self):
        proc, pids = self._start_sleepers(1)
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())
        self.assert_dead(pids.values(), what="worker")

    def test_term_also_kills_setsid_grandchildren(self):
        proc, pids = self._start_sleepers(2, "--spawn-grandchild", "--spawn-setsid-grandchild")
        grandchildren = list(self.pid_files("grandchild").values()) + list(self.pid_files("setsid_grandchild").values())
        self.assertEqual(len(grandchildren), 4)
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())
        self.assert_dead(pids.values(), what="workers")
        self.assert_dead(grandchildren, what="grandchildren")

    def test_second_signal_during_grace_period_kills_at_once(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig.name):
                for name in os.listdir(self.tmp):
                    if name.startswith(("ready.", "got.")):
                        os.unlink(self.path(name))
                # The workers ignore both TERM and INT and note each one they get; only
                # SIGKILL ends them. The grace period is far longer than any wait below,
                # so only the second signal can end the job in time.
                proc, pids = self._start_sleepers(2, "--ignore-term", "--ignore-int",
                                                  "--on-term", self.path("got.{rank}"),
                                                  "--on-int", self.path("got.{rank}"), term_timeout=600)
                os.kill(proc.pid, sig)
                # A worker noting the stop signal shows that gangrun has handled the first one.
                harness.wait_for(lambda: all(os.path.exists(self.path(f"got.{r}")) for r in range(2)), harness.EVENT_TIMEOUT,
                                 f"the first {sig.name} to reach the workers")
                self.assertIsNone(proc.poll(), "gangrun ended before the grace period although the workers ignore it")
                os.kill(proc.pid, sig)
                result = self.finish(proc)
                self.assertEqual(result.returncode, -int(sig), result.describe())
                self.assert_dead(pids.values(), what="workers after the second signal")

    def test_sigkill_to_gangrun_kills_direct_workers(self):
        # Only direct workers are promised here (PR_SET_PDEATHSIG); setsid'd grandchildren
        # may be left to init when gangrun cannot run its teardown.
        proc, pids = self._start_sleepers(3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.assert_dead(pids.values(), what="direct workers after SIGKILL to gangrun")


class ForwardedSignals(GangrunTestCase):
    def test_usr1_and_usr2_are_forwarded_and_the_job_goes_on(self):
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 3, *self.fake(
            "--on-usr1", self.path("sig.{rank}"), "--on-usr2", self.path("sig.{rank}"),
            "--touch", self.ready_file(),
            "--wait-file", go, 300,
            "--exit", 0)])
        self.wait_ready(3)

        def labels(rank):
            try:
                with open(self.path(f"sig.{rank}")) as f:
                    return [line.split()[0] for line in f if line.strip()]
            except FileNotFoundError:
                return []

        os.kill(proc.pid, signal.SIGUSR1)
        harness.wait_for(lambda: all(labels(r) == ["usr1"] for r in range(3)), harness.EVENT_TIMEOUT, "SIGUSR1 at every worker")
        self.assertIsNone(proc.poll(), "gangrun ended on SIGUSR1")
        os.kill(proc.pid, signal.SIGUSR2)
        harness.wait_for(lambda: all(labels(r) == ["usr1", "usr2"] for r in range(3)), harness.EVENT_TIMEOUT, "SIGUSR2 at every worker")
        self.assertIsNone(proc.poll(), "gangrun ended on SIGUSR2")
        with open(go, "w"):
            pass
        result = self.finish(proc)
        self.assertExit(result, 0)


class JobControl(GangrunTestCase):
    def test_tstp_stops_workers_and_gangrun_and_cont_resumes_them(self):
        # The workers finish as soon as GO exists; it is created while they are stopped,
        # so their finishing stamps must come after SIGCONT.
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 2, *self.fake(
            "--touch", self.ready_file(), "--wait-file", go, 300, "--stamp", self.path("done.{rank}"), "--exit", 0)])
        self.wait_ready(2)
        pids = list(self.pid_files().values())
        os.kill(proc.pid, signal.SIGTSTP)
        harness.wait_for(lambda: all(harness.proc_state(p) == "T" for p in pids + [proc.pid]), harness.EVENT_TIMEOUT,
                         "workers and gangrun stopped after SIGTSTP")
        with open(go, "w"):
            pass
        self.assertTrue(all(harness.proc_state(p) == "T" for p in pids + [proc.pid]), "the job resumed on its own")
        continued_at = time.time()
        os.kill(proc.pid, signal.SIGCONT)
        result = self.finish(proc)
        self.assertEqual(result.returncode, 0, result.describe())
        for rank in range(2):
            with open(self.path(f"done.{rank}")) as f:
                finished_at = float(f.read())
            self.assertGreaterEqual(finished_at, continued_at, f"rank {rank} finished while it should be stopped")
        self.assert_dead(pids, what="workers after the job finished")



class StoppedWorker(GangrunTestCase):
    """A worker stopped from outside (kill -STOP, a debugger, a scheduler suspending the job) acts
    on no signal but SIGKILL until it runs again: the teardown sends SIGCONT after its stop
    signal, so that the worker ends with that signal at once; a forwarded signal is no teardown
    and leaves it stopped. --term-timeout is far longer than any wait here, so only the SIGCONT
    can end the stopped worker in time."""

    def start_and_stop_rank_1(self, report):
        proc = self.start(["--nproc_per_node", 2, "--term-timeout", 600, "--report", report, *self.fake(
            "--on-usr1", self.path("usr1.{rank}"), "--on-usr2", self.path("usr2.{rank}"),
            "--touch", self.ready_file(), "--sleep", 300)])
        self.wait_ready(2)
        pids = self.pid_files()
        self.stop_worker(pids[1])
        return proc, pids

    def test_a_stopped_worker_ends_with_the_stop_signal(self):
        report = self.path("report.json")
        proc, pids = self.start_and_stop_rank_1(report)
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())
        workers = {w["rank"]: w for w in harness.report_attempts(self.read_json(report))[-1]}
        self.assertEqual(workers[1]["signal"], "SIGTERM",
                         f"the stopped worker did not end with the stop signal: {workers[1]}")
        self.assert_dead(pids.values(), what="workers")

    def test_a_forwarded_signal_leaves_a_stopped_worker_stopped(self):
        proc, pids = self.start_and_stop_rank_1(self.path("report.json"))
        stopped = pids[1]
        os.kill(proc.pid, signal.SIGUSR1)
        harness.wait_for(lambda: os.path.exists(self.path("usr1.0")), harness.EVENT_TIMEOUT, "SIGUSR1 at rank 0")
        # SIGUSR2 follows SIGUSR1 through the same shim: once it is pending too, a SIGCONT
        # sent after SIGUSR1 would have run the worker (and its handler would have taken SIGUSR1).
        os.kill(proc.pid, signal.SIGUSR2)
        harness.wait_for(lambda: harness.proc_state(stopped) != "T"
                         or {signal.SIGUSR1, signal.SIGUSR2} <= harness.pending_signals(stopped),
                         harness.EVENT_TIMEOUT, "SIGUSR1 and SIGUSR2 pending at the stopped rank 1")
        self.assertEqual(harness.proc_state(stopped), "T", "a forwarded signal woke the stopped worker")
        self.assertFalse(os.path.exists(self.path("usr1.1")), "the stopped worker ran its SIGUSR1 handler")
        self.assertIsNone(proc.poll(), "gangrun ended on a forwarded signal")
        # The test's own SIGCONT: it runs the worker's handlers, and the job ends as any other.
        os.kill(stopped, signal.SIGCONT)
        harness.wait_for(lambda: os.path.exists(self.path("usr2.1")), harness.EVENT_TIMEOUT,
                         "rank 1 to take SIGUSR2 once it runs")
        os.kill(proc.pid, signal.SIGTERM)
        result = self.finish(proc)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())
        self.assert_dead(pids.values(), what="workers")


if __name__ == "__main__":
    harness.main()
