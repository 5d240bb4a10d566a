"""The gang doctor (docs/hangs.md): with --hang-timeout, a gang that has printed no line for
that long has every rank's stack read (py-spy) before anything is stopped; gangrun prints them
grouped, the odd rank first, puts them in --report and the log directory, and stops (exit 5),
restarts, or only reports, as --on-hang says. When a rank fails, the survivors' stacks are read
in the failure window (unless --no-stacks-at-failure). A rank that never reached
init_process_group is also named by the store; torch's file timers are served; `gangrun stacks`
reads a running job from outside.

TorchHang runs real PyTorch gloo on CPU (GANGRUN_TEST_PYTHON: Debian's torch 1.13, or 2.x as
integration.test_hang_doctor.torch2), 4 ranks, rank 2 waiting in load_batch while the others
block in an all-reduce (or in init_process_group; hang_doctor_worker.py). The stack tool is the
py-spy installed beside GANGRUN_TEST_PEER_PYTHON (scripts/requirements-peers.txt); without it
those tests skip. The other classes need no torch: a missing py-spy, a worker that is not
Python, the tool found beside the interpreter, what counts as progress, `gangrun stacks`, the
options' spellings and values, and their usage errors.

Every wait is for an event (a line in gangrun's output, gangrun's end); the hang timeouts are
short, since the workers print a line every 0.2 s until they reach the point where they hang.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness
from harness import EVENT_TIMEOUT, PEER_PYTHON, TEST_PYTHON, GangrunTestCase

SCRIPT = os.path.join(harness.HERE, "hang_doctor_worker.py")
JOB_TIMEOUT = 3 * EVENT_TIMEOUT
HANG_EXIT = 5
HUNG_RANK = 2
WORLD = 4
SUMMARY_HEAD = "no rank made progress for"
RUN_DIR = re.compile(r"logs of this run: (\S+)")
# "  rank 2 (node1, pid 4711): load_batch <- train_step" or "ranks 0-1, 3 (node1): all_reduce <- ..."
GROUP_LINE = re.compile(r"^(?:gangrun: )?\s*ranks? (\d[\d, -]*) \(([^)]*)\): (.*)$")


def py_spy():
    """The py-spy beside PEER_PYTHON (scripts/install-deps puts it there); skips without it."""
    path = os.path.join(os.path.dirname(PEER_PYTHON), "py-spy")
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"no py-spy beside {PEER_PYTHON} (scripts/install-deps installs it)")
    return path


def path_without_py_spy():
    """PATH without the directories that hold a py-spy."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "py-spy")))


def rank_set(text):
    """{0, 1, 3} from "0-1, 3" (report::rank_list's style) or "0, 1, 3"."""
    ranks = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        ranks.update(range(int(first), int(last or first) + 1))
    return ranks


def hang_groups(test, console):
    """[(ranks, where, what)] of the first hang summary in CONSOLE: the group lines that follow
    the line saying no rank made progress (lines before the first group are skipped: a warning
    may come first)."""
    test.assertIn(SUMMARY_HEAD, console, "no hang summary")
    groups = []
    for line in console[console.index(SUMMARY_HEAD):].splitlines()[1:]:
        match = GROUP_LINE.match(line)
        if match:
            groups.append((rank_set(match.group(1)), match.group(2), match.group(3)))
        elif groups:
            break
    test.assertTrue(groups, f"no rank lines after {SUMMARY_HEAD!r}:\n{console[-3000:]}")
    return groups


def hang_groups_of(test, text):
    """[(ranks, where, what)] of the group lines in TEXT (gangrun stacks' summary)."""
    groups = [(rank_set(m.group(1)), m.group(2), m.group(3))
              for m in map(GROUP_LINE.match, text.splitlines()) if m]
    test.assertTrue(groups, f"no rank lines in:\n{text[-3000:]}")
    return groups


def main_thread(entry):
    """The main thread of a report's rank entry: the thread whose id is the pid, else the
    one named MainThread, else the first."""
    threads = entry["threads"]
    for thread in threads:
        if thread.get("thread_id") == entry["pid"]:
            return thread
    for thread in threads:
        if thread.get("name") == "MainThread":
            return thread
    return threads[0] if threads else None


def functions(entry):
    thread = main_thread(entry)
    return [frame["function"] for frame in thread["frames"]] if thread else []


class HangTestCase(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.report = self.path("report.json")
        self.log_dir = self.path("logs")

    def console(self, result):
        return result.stderr + "\n" + result.stdout

    def attempt_dir(self, result, attempt):
        match = RUN_DIR.search(self.console(result))
        self.assertIsNotNone(match, "gangrun did not print the run's log directory" + result.describe())
        return os.path.join(match.group(1), f"attempt_{attempt}")

    def assert_odd_one_out(self, result, ranks, odd_rank, function):
        """The summary names ODD_RANK with FUNCTION, on a line of its own, and every rank of
        RANKS in some group; no other rank is on a line with FUNCTION."""
        groups = hang_groups(self, self.console(result))
        with_function = [group for group in groups if function in group[2]]
        self.assertTrue(with_function, f"no rank line names {function}: {groups}" + result.describe())
        self.assertEqual(set().union(*(g[0] for g in with_function)), {odd_rank}, groups)
        self.assertEqual(set().union(*(g[0] for g in groups)), set(ranks), groups)
        self.assertEqual(groups[0][0], {odd_rank}, f"the odd one out is not first: {groups}")
        return groups

    def start_for_stacks(self, *options):
        """Starts 3 plain Python ranks (the worker's idle mode: rank 2 in load_batch) with OPTIONS,
        for `gangrun stacks` from another terminal; the job registry is in the test's own
        directory, so this job is the user's only one there. Returns gangrun, the environment
        to run `gangrun stacks` in (self.stacks), and the ranks' pids."""
        py_spy()  # found beside PEER_PYTHON, the workers' interpreter
        env = harness.clean_env(TMPDIR=self.tmp, PATH=path_without_py_spy())
        env.pop("XDG_RUNTIME_DIR", None)
        gangrun = self.start(["--nproc-per-node", 3, *options, "--python", PEER_PYTHON, SCRIPT, self.pid_dir, "idle"],
                             env=env)
        return gangrun, env, self.wait_pid_files(3)

    def stacks(self, env, *args):
        """What `gangrun stacks ARGS` printed; it must succeed."""
        done = subprocess.run([harness.GANGRUN, "stacks", *args], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, env=env, timeout=EVENT_TIMEOUT)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def assert_stacks(self, stacks, ranks, pids):
        """A STACKS record with every rank of RANKS read, at the pid it recorded."""
        self.assertIsInstance(stacks["summary"], list)
        self.assertTrue(stacks["summary"], stacks)
        by_rank = {entry["rank"]: entry for entry in stacks["ranks"]}
        self.assertTrue(set(ranks) <= set(by_rank), f"ranks {sorted(by_rank)}, expected {ranks}")
        for rank in ranks:
            entry = by_rank[rank]
            self.assertIsNone(entry["unavailable"], entry)
            self.assertTrue(entry["threads"], entry)
            self.assertEqual(entry["pid"], pids[rank], entry)
            self.assertTrue(entry["host"], entry)
            for thread in entry["threads"]:
                for key in ("name", "thread_id", "active", "frames"):
                    self.assertIn(key, thread)
                for frame in thread["frames"]:
                    self.assertEqual(set(frame), {"function", "file", "line"}, frame)
        return by_rank


class TorchHang(HangTestCase):
    def setUp(self):
        harness.require_torch()
        self.py_spy = py_spy()
        super().setUp()

    def worker(self, mode, *args):
        return ["--nproc-per-node", WORLD, "--python", TEST_PYTHON, SCRIPT, self.pid_dir, mode, *args]

    def hang_options(self, action):
        return ["--hang-timeout", 3, "--on-hang", action, "--stack-tool", self.py_spy, "--report", self.report]

    def test_a_hang_is_read_on_every_rank_then_the_gang_is_stopped(self):
        result = self.gangrun([*self.hang_options("stop"), "--log-dir", self.log_dir, *self.worker("hang")],
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        pids = self.pid_files()
        self.assertEqual(set(pids), set(range(WORLD)))
        self.assert_odd_one_out(result, range(WORLD), HUNG_RANK, "load_batch")
        attempt = self.read_json(self.report)["attempts"][-1]
        for worker in attempt["workers"]:
            self.assertTrue(worker["stopped_by_gangrun"], worker)
        hang = attempt["hang"]
        self.assertEqual(hang["action"], "stop")
        self.assertEqual(hang["timeout_s"], 3.0)
        self.assertGreaterEqual(hang["silent_for_s"], 2.9, hang)
        by_rank = self.assert_stacks(hang["stacks"], range(WORLD), pids)
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]))
        for rank in set(range(WORLD)) - {HUNG_RANK}:
            self.assertIn("all_reduce", functions(by_rank[rank]), by_rank[rank])
            self.assertNotIn("load_batch", functions(by_rank[rank]))
        self.assertTrue(any("load_batch" in line and "rank 2 (" in line for line in hang["stacks"]["summary"]),
                        hang["stacks"]["summary"])
        stacks_file = os.path.join(self.attempt_dir(result, 0), "hang-stacks.txt")
        self.assertTrue(os.path.isfile(stacks_file), f"no {stacks_file}" + result.describe())
        with open(stacks_file) as f:
            self.assertIn("load_batch", f.read())
        self.assertEqual(hang["stacks"]["file"], stacks_file)
        self.assert_dead(pids.values(), what="workers")

    def test_ranks_late_to_the_store_are_named(self):
        release = self.path("release")
        gangrun = self.start(["--arrival-timeout", 2, "--report", self.report, *self.worker("late-init", release)])
        harness.wait_for(lambda: "not connected to the store" in self.stderr_of(gangrun) or gangrun.poll() is not None,
                         JOB_TIMEOUT, "rank 2 named as late to the store")
        with open(release, "w"):
            pass
        result = self.finish(gangrun)
        self.assertExit(result, 0)
        self.assertRegex(self.console(result), r"rank 2 \([^)]*pid \d+\) has not connected to the store at \S+, "
                         r"while other ranks have waited there for 2 s", result.describe())
        late = self.read_json(self.report)["attempts"][-1]["late_to_store"]
        self.assertEqual(late["ranks"], [HUNG_RANK], late)
        self.assertEqual(late["after_s"], 2.0, late)

    def test_store_traffic_is_progress(self):
        # Six seconds without a line, but rank 0 writes to the store every 0.2 s meanwhile.
        result = self.gangrun(["--hang-timeout", 2, "--stack-tool", self.py_spy, *self.worker("store-busy")],
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assertNotIn("no rank made progress", self.console(result), result.describe())

    def test_a_rank_that_never_reached_init_process_group_is_named_by_the_store_too(self):
        result = self.gangrun([*self.hang_options("stop"), *self.worker("late-init")], timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        self.assert_odd_one_out(result, range(WORLD), HUNG_RANK, "load_batch")
        self.assertRegex(self.console(result), r"rank 2 has not connected to the store at [^\n]*init_process_group",
                         result.describe())
        hang = self.read_json(self.report)["attempts"][-1]["hang"]
        self.assertEqual(hang["not_at_store"], [HUNG_RANK])
        self.assert_dead(self.pid_files().values(), what="workers")

    def test_b_on_hang_report_stops_nothing(self):
        go_on = self.path("go-on")
        gangrun = self.start([*self.hang_options("report"), *self.worker("hang-until", go_on)])
        harness.wait_for(lambda: self.summary_shown(gangrun), EVENT_TIMEOUT, "the hang summary")
        self.assertIsNone(gangrun.poll(), "gangrun ended after reporting the hang")
        with open(go_on, "w"):
            pass
        result = self.finish(gangrun, timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assert_odd_one_out(result, range(WORLD), HUNG_RANK, "load_batch")
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertEqual(attempt["hang"]["action"], "report")
        self.assert_stacks(attempt["hang"]["stacks"], range(WORLD), self.pid_files())
        for worker in attempt["workers"]:
            self.assertEqual(worker["exit_code"], 0, worker)

    def summary_shown(self, gangrun):
        """True once gangrun's output has a hang summary naming load_batch (or it ended)."""
        text = self.stderr_of(gangrun)
        with open(self.path(f"gangrun.{gangrun.index}.out"), errors="replace") as f:
            text += "\n" + f.read()
        return (SUMMARY_HEAD in text and "load_batch" in text[text.index(SUMMARY_HEAD):]) or gangrun.poll() is not None

    def test_c_on_hang_restart_ends_the_round_and_starts_another(self):
        result = self.gangrun([*self.hang_options("restart"), "--max-restarts", 1, *self.worker("hang-first-attempt")],
                              timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assert_odd_one_out(result, range(WORLD), HUNG_RANK, "load_batch")
        attempts = self.read_json(self.report)["attempts"]
        self.assertEqual(len(attempts), 2, attempts)
        self.assertEqual(attempts[0]["hang"]["action"], "restart")
        self.assertFalse(attempts[1].get("hang"), attempts[1])
        self.assertEqual(self.console(result).count(SUMMARY_HEAD), 1, result.describe())

    def test_an_expired_torch_file_timer_names_the_rank_and_kills_it(self):
        # torchrun's watchdog (torch.distributed.elastic.timer), served by gangrun: rank 2's
        # timer expires while it waits in load_batch; it is named with its stack and killed
        # with the client's signal (SIGKILL); the others finish.
        env = harness.clean_env(TORCHELASTIC_ENABLE_FILE_TIMER=1)
        result = self.gangrun(["--stack-tool", self.py_spy, "--report", self.report, *self.worker("timer")],
                              env=env, timeout=JOB_TIMEOUT)
        self.assertExit(result, 128 + signal.SIGKILL)
        console = self.console(result)
        self.assertRegex(console, r"rank 2 \(pid \d+\): its timer 'step'[^\n]*expired", result.describe())
        self.assertTrue(any(line.lstrip().startswith("rank 2 (") and "load_batch" in line
                            for line in console.splitlines()), result.describe())
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertEqual(attempt["root_cause"]["rank"], HUNG_RANK)
        expired = attempt["timer_expired"]
        self.assertEqual((expired["rank"], expired["scope_id"], expired["signal"]), (HUNG_RANK, "step", 9))
        by_rank = self.assert_stacks(expired["stacks"], [HUNG_RANK], self.pid_files())
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]))
        ranks = {w["rank"]: w for w in attempt["workers"]}
        for rank in set(range(WORLD)) - {HUNG_RANK}:
            self.assertEqual(ranks[rank]["exit_code"], 0, ranks[rank])
        self.assert_dead(self.pid_files().values(), what="workers")

    def test_d_stacks_of_the_survivors_at_a_failure(self):
        marks = self.path("marks")
        os.mkdir(marks)
        result = self.gangrun(["--failure-window", 5, "--report", self.report, "--log-dir", self.log_dir,
                               "--stack-tool", self.py_spy, *self.worker("fail", marks)], timeout=JOB_TIMEOUT)
        self.assertExit(result, 1)
        pids = self.pid_files()
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertEqual(attempt["root_cause"]["rank"], 1)
        self.assertIn("stacks_at_failure", attempt, sorted(attempt))
        survivors = [0, 2, 3]
        by_rank = self.assert_stacks(attempt["stacks_at_failure"], survivors, pids)
        for rank in survivors:
            self.assertTrue(any("all_reduce" in f or "allreduce" in f for f in functions(by_rank[rank])),
                            by_rank[rank])
        self.assertTrue(os.path.isfile(os.path.join(self.attempt_dir(result, 0), "failure-stacks.txt")),
                        result.describe())
        self.assert_dead(pids.values(), what="workers")

    def test_d_no_stacks_at_failure(self):
        marks = self.path("marks")
        os.mkdir(marks)
        result = self.gangrun(["--no-stacks-at-failure", "--report", self.report, "--log-dir", self.log_dir,
                               "--stack-tool", self.py_spy, *self.worker("fail", marks)], timeout=JOB_TIMEOUT)
        self.assertExit(result, 1)
        attempt = self.read_json(self.report)["attempts"][-1]
        self.assertNotIn("stacks_at_failure", attempt)
        self.assertFalse(os.path.exists(os.path.join(self.attempt_dir(result, 0), "failure-stacks.txt")))


class TorchStraggler(HangTestCase):
    """--straggler-watch on a DDP job (hang_doctor_worker.py's straggle and balanced): the rank
    that spends three times as long outside the collective is named after the documented 10
    samples; a balanced run of the same length names no one. Run once, under the PyTorch 2.x of
    PEER_PYTHON (whose DDP frames the watch must know), in either run of this file: the sampling
    is gangrun's, the same for every torch."""

    SAMPLE_EVERY = 0.2

    def setUp(self):
        harness.peer_tool("torchrun")  # PEER_PYTHON has torch 2.x
        self.py_spy = py_spy()
        super().setUp()

    def run_watched(self, mode):
        result = self.gangrun([f"--straggler-watch={self.SAMPLE_EVERY}", "--stack-tool", self.py_spy,
                               "--report", self.report, "--nproc-per-node", WORLD, "--python", PEER_PYTHON,
                               SCRIPT, self.pid_dir, mode], timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        watch = self.read_json(self.report)["attempts"][-1]["straggler_watch"]
        self.assertEqual({entry["rank"] for entry in watch["ranks"]}, set(range(WORLD)), watch)
        return result, watch

    def test_the_slow_rank_is_named(self):
        result, watch = self.run_watched("straggle")
        self.assertEqual(watch["stragglers"], [1], watch)
        named = [line for line in self.console(result).splitlines() if "straggler: " in line]
        self.assertEqual(len(named), 1, named)
        self.assertIn("rank 1 (", named[0])
        samples = int(re.search(r"of (\d+) samples", named[0]).group(1))
        self.assertGreaterEqual(samples, 10, named[0])

    def test_a_balanced_run_names_no_one(self):
        result, watch = self.run_watched("balanced")
        self.assertEqual(watch["stragglers"], [], watch)
        self.assertNotIn("straggler: ", self.console(result))
        self.assertGreaterEqual(watch["samples"], 10, watch)


class HangWithoutTorch(HangTestCase):
    """Plain Python workers (TEST_PYTHON without torch), and one that is not Python."""

    def idle_workers(self, python, count=3):
        return ["--nproc-per-node", count, "--python", python, SCRIPT, self.pid_dir, "idle"]

    def test_e_without_py_spy_the_hang_is_still_reported_and_acted_on(self):
        if os.path.exists(os.path.join(os.path.dirname(TEST_PYTHON), "py-spy")):
            self.skipTest(f"{TEST_PYTHON} has a py-spy beside it")
        env = harness.clean_env(PATH=path_without_py_spy())
        result = self.gangrun(["--hang-timeout", "2s", "--on-hang", "stop", "--report", self.report,
                               *self.idle_workers(TEST_PYTHON)], env=env, timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        console = self.console(result)
        self.assertRegex(console, r"py-spy[^\n]*not found", result.describe())
        self.assertIn("pip install py-spy", console)
        groups = hang_groups(self, console)
        self.assertEqual(set().union(*(g[0] for g in groups)), {0, 1, 2}, groups)
        for ranks, _, what in groups:
            self.assertTrue(what.strip(), f"ranks {ranks}: an empty reason" + result.describe())
        hang = self.read_json(self.report)["attempts"][-1]["hang"]
        self.assertEqual(hang["timeout_s"], 2.0)
        for entry in hang["stacks"]["ranks"]:
            self.assertTrue(entry["unavailable"], entry)
            self.assertEqual(entry["threads"], [], entry)
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_f_a_worker_that_is_not_python_gets_a_reason(self):
        stack_tool = py_spy()
        loop = f'echo $$ >> {self.pid_dir}/all.pids; echo "rank $RANK is up"; while :; do sleep 1; done'
        result = self.gangrun(["--nproc-per-node", 2, "--hang-timeout", 2, "--on-hang", "stop",
                               "--stack-tool", stack_tool, "--report", self.report,
                               "--no-python", "sh", "-c", loop], timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        groups = hang_groups(self, self.console(result))
        self.assertEqual(set().union(*(g[0] for g in groups)), {0, 1}, groups)
        for ranks, _, what in groups:
            self.assertTrue(what.strip(), f"ranks {ranks}: an empty reason" + result.describe())
        for entry in self.read_json(self.report)["attempts"][-1]["hang"]["stacks"]["ranks"]:
            self.assertTrue(entry["unavailable"], entry)
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_a_line_of_any_rank_is_progress(self):
        # Rank 1 prints a line every 0.2 s for 6 s, hidden from the console: its lines still
        # count. Rank 0, silent, waits for the file rank 1 makes when it is done. (The timeout
        # is 15 times the pause between lines, so that a loaded machine cannot stretch a pause
        # into a hang.)
        done = self.path("done")
        ticks = (f'echo $$ >> {self.pid_dir}/all.pids; '
                 f'if [ "$RANK" = 1 ]; then i=0; while [ $i -lt 30 ]; do echo tick $i; sleep 0.2; i=$((i+1)); done; '
                 f'touch {done}; else while [ ! -e {done} ]; do sleep 0.1; done; fi')
        result = self.gangrun(["--nproc-per-node", 2, "--hang-timeout", 3, "--local-ranks-filter", 0,
                               "--no-python", "sh", "-c", ticks], timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assertNotIn(SUMMARY_HEAD, self.console(result))

    def test_a_signal_while_the_stacks_are_read_leaves_no_action_done(self):
        # A stand-in stack tool that says it has begun, then takes longer than gangrun waits.
        reading = self.path("reading")
        slow_tool = self.path("slow-py-spy")
        with open(slow_tool, "w") as f:
            f.write(f"#!/bin/sh\ntouch {reading}\nexec sleep 60\n")
        os.chmod(slow_tool, 0o755)
        gangrun = self.start(["--hang-timeout", 1, "--stack-tool", slow_tool, "--report", self.report,
                              *self.idle_workers(TEST_PYTHON, count=2)])
        harness.wait_for(lambda: os.path.exists(reading) or gangrun.poll() is not None, JOB_TIMEOUT,
                         "the stacks being read")
        gangrun.send_signal(signal.SIGTERM)
        result = self.finish(gangrun)
        self.assertEqual(result.returncode, -int(signal.SIGTERM), result.describe())  # dies by it, as sent
        hang = self.read_json(self.report)["attempts"][-1]["hang"]
        self.assertEqual(hang["action"], "none", hang)
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_py_spy_beside_the_interpreter_is_found(self):
        py_spy()
        env = harness.clean_env(PATH=path_without_py_spy())
        result = self.gangrun(["--hang-timeout", 2, *self.idle_workers(PEER_PYTHON)], env=env, timeout=JOB_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        self.assert_odd_one_out(result, range(3), HUNG_RANK, "load_batch")
        self.assert_dead(self.recorded_pids(), what="workers")


class StacksOnDemand(HangTestCase):
    """`gangrun stacks` from another terminal: every rank of a running job, nothing stopped."""

    def test_gangrun_stacks_reads_a_running_job(self):
        gangrun, env, pids = self.start_for_stacks()

        def stacks(*args):
            return self.stacks(env, *args)

        # Rank 2 prints a line, then enters load_batch: read until it is there.
        harness.wait_for(lambda: "load_batch" in stacks("--pid", str(gangrun.pid)), EVENT_TIMEOUT,
                         "rank 2 in load_batch")
        for selector in (["--pid", str(gangrun.pid)], []):
            with self.subTest(selector=selector):
                groups = hang_groups_of(self, stacks(*selector))
                self.assertEqual(groups[0][0], {HUNG_RANK}, groups)
                self.assertIn("load_batch", groups[0][2])
                self.assertEqual(set().union(*(g[0] for g in groups)), {0, 1, 2}, groups)
        doc = json.loads(stacks("--json"))
        by_rank = self.assert_stacks(doc, range(3), pids)
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]))
        self.assertIsNone(gangrun.poll(), "reading the stacks stopped the job")
        gangrun.send_signal(signal.SIGTERM)
        self.finish(gangrun)
        self.assert_dead(pids.values(), what="workers")


class StacksOfAnotherUser(HangTestCase):
    """`gangrun stacks --pid` run by another user than the job's: a clear refusal."""

    def test_a_job_of_another_user_is_named_as_such(self):
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root and setpriv, to ask as another user")
        # A copy of gangrun that the other user may run, wherever the build lies.
        shared = tempfile.mkdtemp(prefix="gangrun-other-user.")
        self.addCleanup(shutil.rmtree, shared, True)
        os.chmod(shared, 0o755)
        binary = os.path.join(shared, "gangrun")
        shutil.copy2(harness.GANGRUN, binary)
        gangrun = self.start(["--nproc-per-node", 1, *self.fake("--sleep", 600)])
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary, "stacks",
                               "--pid", str(gangrun.pid)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              env=harness.clean_env(TMPDIR=shared), timeout=EVENT_TIMEOUT)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"pid {gangrun.pid} is a process of another user (uid 0)", done.stderr)
        self.assertIn("run gangrun stacks as that user", done.stderr)
        self.assertIsNone(gangrun.poll(), "asking stopped the job")
        gangrun.send_signal(signal.SIGTERM)
        self.finish(gangrun)


class HangOptions(HangTestCase):
    """Spellings, durations, the environment, and the usage errors (exit 2, nothing started)."""

    def sleeping(self, count=2):
        return ["--nproc_per_node", count, *self.fake("--sleep", 600)]

    def hang_record(self):
        return self.read_json(self.report)["attempts"][-1]["hang"]

    def test_durations_spellings_and_the_environment(self):
        for args, env, seconds in (
                (["--hang_timeout", "1.5", "--on_hang", "stop"], {}, 1.5),
                (["--hang-timeout", "0.025m"], {}, 1.5),
                ([], {"GANGRUN_HANG_TIMEOUT": "1s"}, 1.0)):
            with self.subTest(args=args, env=env):
                result = self.gangrun([*args, "--report", self.report, *self.sleeping()],
                                      env=harness.clean_env(**env), timeout=JOB_TIMEOUT)
                self.assertExit(result, HANG_EXIT)
                self.assertEqual(self.hang_record()["timeout_s"], seconds)
                self.assertEqual(self.hang_record()["action"], "stop")

    def test_restart_without_a_restart_left_exits_5(self):
        for restarts in (0, 1):
            with self.subTest(max_restarts=restarts):
                result = self.gangrun(["--hang-timeout", 1, "--on-hang", "restart", "--max-restarts", restarts,
                                       "--report", self.report, *self.sleeping()], timeout=JOB_TIMEOUT)
                self.assertExit(result, HANG_EXIT)
                attempts = self.read_json(self.report)["attempts"]
                self.assertEqual(len(attempts), restarts + 1)
                for attempt in attempts:
                    self.assertEqual(attempt["hang"]["action"], "restart")

    def test_zero_is_off(self):
        result = self.gangrun(["--hang-timeout", 0, "--report", self.report, "--nproc_per_node", 2,
                               *self.fake("--sleep", 2)], timeout=JOB_TIMEOUT)
        self.assertExit(result, 0)
        self.assertNotIn(SUMMARY_HEAD, self.console(result))
        self.assertFalse(self.read_json(self.report)["attempts"][-1].get("hang"))

    def check_usage_error(self, args, named, env=None):
        result = self.gangrun([*args, *self.sleeping()], env=env, timeout=EVENT_TIMEOUT)
        self.assertExit(result, 2)
        self.assertIn(named, result.stderr, result.describe())
        self.assert_nothing_started()
        return result

    def test_a_duration_that_is_not_one(self):
        result = self.check_usage_error(["--hang-timeout", "soon"], "soon")
        self.assertTrue(harness.option_named(result.stderr, "--hang_timeout"), result.describe())

    def test_a_duration_from_the_environment_that_is_not_one(self):
        self.check_usage_error([], "GANGRUN_HANG_TIMEOUT", env=harness.clean_env(GANGRUN_HANG_TIMEOUT="soon"))

    def test_an_unknown_action(self):
        self.check_usage_error(["--hang-timeout", 5, "--on-hang", "sometimes"], "sometimes")

    def test_a_stack_tool_that_is_not_there(self):
        result = self.check_usage_error(["--stack-tool", "/nonexistent/py-spy", "--hang-timeout", 5],
                                        "/nonexistent/py-spy")
        self.assertIn("--stack-tool", result.stderr)
        # From the environment, the variable is named, not the flag.
        result = self.check_usage_error(["--hang-timeout", 5], "GANGRUN_STACK_TOOL: ",
                                        env=harness.clean_env(GANGRUN_STACK_TOOL="/nonexistent/py-spy"))
        self.assertIn("/nonexistent/py-spy", result.stderr)

    def test_an_arrival_timeout_that_is_not_a_duration(self):
        result = self.check_usage_error(["--arrival-timeout", "later"], "later")
        self.assertTrue(harness.option_named(result.stderr, "--arrival_timeout"), result.describe())


if __name__ == "__main__":
    harness.main()
