"""A job of 256 nodes on one machine, static and c10d: a real gangrun head (node 0: the store,
the coordinator and real stand-in workers) and one gangrun_swarm process holding nodes 1..255, each of them
the real agent's participant over its own connections, with stand-in workers of its own
(tests/helpers/swarm.cpp). The rendezvous is authenticated with the job's secret.

Every wait is for an event (a line of the swarm, a file a worker writes, a process's end),
bounded by a timeout; nothing is timed. The swarm's events go to a queue read by a thread, so
a wait can give up. tearDown (harness) fails the test on any worker left running; each case
also checks that the head's process group is gone.
"""

import json
import os
import queue
import signal
import subprocess
import threading

import harness
from harness import EVENT_TIMEOUT

SWARM = os.environ.get("GANGRUN_SWARM", os.path.join(harness.REPO, "build", "tests", "gangrun_swarm"))
STAND_IN_STACK_TOOL = os.path.join(harness.REPO, "scripts", "bench", "stand_in_stack_tool")
NODES = 256
# A worker that only gangrun should end sleeps far longer than any wait of a test.
SLEEP_FOREVER = 10 * EVENT_TIMEOUT
# 256 nodes joining, or all of them being told a round, on a loaded 2-core machine (or under
# the sanitizers) take longer than one event of a small job.
NODES_TIMEOUT = 3 * EVENT_TIMEOUT


class Swarm:
    """A running gangrun_swarm: commands to its stdin, its events read from its stdout."""

    def __init__(self, test, port, count, *extra, nnodes=str(NODES)):
        self.test = test
        self.argv = [SWARM, "--store", f"127.0.0.1:{port}", "--nnodes", nnodes, "--count", str(count),
                     "--first-node", "1", *extra]
        self.err_path = test.path("swarm.err")
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         env=harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET),
                                         start_new_session=True, cwd=test.tmp)
        self.events = queue.Queue()
        self.seen = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        test.addCleanup(self._end)

    def _read(self):
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)  # its stdout closed: it ended

    def _end(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc.stdin.close()
        self.proc.stdout.close()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def send(self, command):
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()

    def wait_event(self, event, round_number, timeout=NODES_TIMEOUT):
        """The first event EVENT of round ROUND_NUMBER; fails the test if the swarm ends or
        TIMEOUT seconds pass first."""
        while True:
            try:
                line = self.events.get(timeout=timeout)
            except queue.Empty:
                self.test.fail(f"no {event} of round {round_number} from the swarm within {timeout} s; "
                               f"its last events: {self.seen[-5:]}\nits stderr:\n{self.stderr()}")
            if line is None:
                self.test.fail(f"the swarm ended (exit {self.proc.wait()}) before {event} of round {round_number}; "
                               f"its last events: {self.seen[-5:]}\nits stderr:\n{self.stderr()}")
            self.seen.append(line)
            if line["event"] == event and line["round"] == round_number:
                return line

    def wait_answers(self, count, timeout=NODES_TIMEOUT):
        """The first COUNT answered events (waited for: each node prints one just after it answered)."""
        def answers():
            return [line for line in self.seen if line["event"] == "answered"]
        while len(answers()) < count:
            try:
                line = self.events.get(timeout=timeout)
            except queue.Empty:
                self.test.fail(f"{len(answers())} of {count} nodes answered within {timeout} s")
            if line is None:
                self.test.fail(f"the swarm ended (exit {self.proc.wait()}) after {len(answers())} of {count} "
                               f"answers\nits stderr:\n{self.stderr()}")
            self.seen.append(line)
        return answers()

    def of(self, event, round_number):
        """The events EVENT of round ROUND_NUMBER seen so far."""
        return [line for line in self.seen if line["event"] == event and line["round"] == round_number]

    def finish(self):
        try:
            return self.proc.wait(timeout=NODES_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.test.fail(f"the swarm did not end within {NODES_TIMEOUT} s\nits stderr:\n{self.stderr()}")


class SwarmCase(harness.GangrunTestCase):
    def setUp(self):
        super().setUp()
        if not os.access(SWARM, os.X_OK):
            self.skipTest(f"no gangrun_swarm at {SWARM} (build the test helpers: scripts/build)")
        self.port = harness.free_port()

    def start_head_with(self, launch_args, *worker_args, rendezvous=None):
        """Node 0: a real agent that hosts the store and the coordinator (static, unless
        RENDEZVOUS gives other flags); its one worker touches started.{restart}, writes
        term.{restart} when it gets SIGTERM, then runs WORKER_ARGS."""
        worker = self.fake("--touch", self.path("started.{restart}"), "--on-term", self.path("term.{restart}"),
                           *worker_args)
        if rendezvous is None:
            rendezvous = ["--nnodes", NODES, "--node_rank", 0, "--master_addr", "127.0.0.1",
                          "--master_port", self.port]
        return self.start([*rendezvous, *launch_args, *worker],
                          env=harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET))

    def wait_file(self, name, head):
        harness.wait_for(lambda: os.path.exists(self.path(name)) or head.poll() is not None, NODES_TIMEOUT,
                         f"{name} from the head's worker")
        self.assertTrue(os.path.exists(self.path(name)),
                        f"the head ended before its worker wrote {name}:\n{self.stderr_of(head)}")

    def assert_head_gone(self, head):
        """The head's process group (it started in a session of its own) and every worker of the
        test are gone."""
        def group_gone():
            try:
                os.killpg(head.pid, 0)
                return False
            except ProcessLookupError:
                return True
        harness.wait_for(group_gone, EVENT_TIMEOUT, f"the head's process group {head.pid} to be gone")
        self.assert_dead(self.recorded_pids(), what="the head's workers")

    def test_256_nodes_start_fail_over_and_end(self):
        head = self.start_head_with(["--max-restarts", 1], "--if-restart-below", 1, "--sleep", SLEEP_FOREVER)
        swarm = Swarm(self, self.port, NODES - 1)

        swarm.wait_event("all_assigned", 0)
        self.assertEqual(len(swarm.of("assigned", 0)), NODES - 1)
        self.assertEqual(sorted(line["group_rank"] for line in swarm.of("assigned", 0)), list(range(1, NODES)))
        self.wait_file("started.0", head)

        swarm.send("fail 7")
        swarm.wait_event("all_ending", 0)
        self.assertEqual([line["node"] for line in swarm.of("failed", 0)], [7])
        self.assertEqual(len(swarm.of("ending", 0)), NODES - 2)
        self.wait_file("term.0", head)

        swarm.wait_event("all_assigned", 1)
        self.assertEqual({line["restart_count"] for line in swarm.of("assigned", 1)}, {1})
        self.wait_file("started.1", head)  # and at restart 1 it exits 0 by itself
        swarm.send("succeed")
        swarm.wait_event("all_done", 1)
        self.assertEqual(sorted(line["node"] for line in swarm.seen if line["event"] == "done"),
                         list(range(1, NODES)))
        self.assertEqual({line["exit_code"] for line in swarm.seen if line["event"] == "done"}, {0})
        self.assertEqual(swarm.finish(), 0, swarm.stderr())

        result = self.finish(head, timeout=NODES_TIMEOUT)
        self.assertExit(result, 0)
        self.assertIn("rank 7 on node 7 (swarm7, 127.0.0.1) failed (exit code 1)", result.stderr)
        self.assertIn("restarting every node (1 of 1 restarts)", result.stderr)
        self.assertFalse(os.path.exists(self.path("term.1")), "the head's worker of round 1 was stopped")
        self.assert_head_gone(head)

    def test_a_node_that_leaves_a_static_job_is_lost(self):
        head = self.start_head_with([], "--sleep", SLEEP_FOREVER)
        swarm = Swarm(self, self.port, NODES - 1)
        swarm.wait_event("all_assigned", 0)
        self.wait_file("started.0", head)

        swarm.send("leave 9")
        swarm.wait_event("all_ending", 0)
        self.wait_file("term.0", head)
        swarm.wait_event("all_done", 0)
        done = [line for line in swarm.seen if line["event"] == "done"]
        self.assertEqual(len(done), NODES - 2)
        self.assertEqual({line["exit_code"] for line in done}, {3})
        self.assertEqual(swarm.finish(), 3, swarm.stderr())

        result = self.finish(head, timeout=NODES_TIMEOUT)
        self.assertExit(result, 3)
        self.assertIn("node 9 (swarm9, 127.0.0.1)", result.stderr)
        self.assert_head_gone(head)

    def test_c10d_goes_on_without_a_node_that_leaves(self):
        # Round 0 forms once all 256 are in (the test wants every node in it: they must join
        # within the last call, 30 s from the first two); the round after node 9 is lost forms
        # from the nodes that answered, without a last call.
        head = self.start_head_with(["--max-restarts", 1], "--if-restart-below", 1, "--sleep", SLEEP_FOREVER,
                                    rendezvous=["--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{self.port}",
                                                "--nnodes", f"2:{NODES}"])
        swarm = Swarm(self, self.port, NODES - 1, "--rdzv", "c10d", nnodes=f"2:{NODES}")
        swarm.wait_event("all_assigned", 0)
        self.assertEqual(sorted(line["group_rank"] for line in swarm.of("assigned", 0)), list(range(1, NODES)))
        self.wait_file("started.0", head)

        swarm.send("leave 9")
        swarm.wait_event("all_ending", 0)
        self.wait_file("term.0", head)
        swarm.wait_event("all_assigned", 1)
        self.assertEqual(len(swarm.of("assigned", 1)), NODES - 2)
        self.assertNotIn(9, [line["node"] for line in swarm.of("assigned", 1)])
        self.assertEqual(sorted(line["group_rank"] for line in swarm.of("assigned", 1)), list(range(1, NODES - 1)))
        self.wait_file("started.1", head)
        swarm.send("succeed")
        swarm.wait_event("all_done", 1)
        self.assertEqual(swarm.finish(), 0, swarm.stderr())

        result = self.finish(head, timeout=NODES_TIMEOUT)
        self.assertExit(result, 0)
        # c10d numbers nodes by group rank: swarm9 is whichever one it was given.
        self.assertRegex(result.stderr, r"lost the agent on node \d+ \(swarm9, 127\.0\.0\.1\)")
        self.assert_head_gone(head)

    # ---- the gang doctor across 256 nodes: every node has the doctor's link an agent has, and
    # answers with a stand-in stack per rank (the head reads its own worker's with the stand-in
    # stack tool): what is tested is the traffic between nodes, not the reading of a stack.

    def doctor_flags(self, hang_timeout):
        flags = ["--stack-tool", STAND_IN_STACK_TOOL]
        return flags if hang_timeout is None else [*flags, "--hang-timeout", hang_timeout, "--on-hang", "stop"]

    def test_a_hang_of_256_nodes_is_found_and_every_node_answers(self):
        head = self.start_head_with(self.doctor_flags(2), "--sleep", SLEEP_FOREVER)
        swarm = Swarm(self, self.port, NODES - 1, "--hang-timeout", "2")
        swarm.wait_event("all_assigned", 0)
        self.wait_file("started.0", head)
        # No rank prints: the whole gang is silent, and the lead (the head) asks every node.
        swarm.wait_event("all_done", 0)
        answered = [line for line in swarm.seen if line["event"] == "answered"]
        self.assertEqual(sorted(line["node"] for line in answered), list(range(1, NODES)))
        self.assertEqual({line["why"] for line in answered}, {"hang"})
        self.assertEqual({line["exit_code"] for line in swarm.seen if line["event"] == "done"}, {5})
        self.assertEqual(swarm.finish(), 5, swarm.stderr())

        result = self.finish(head, timeout=NODES_TIMEOUT)
        self.assertExit(result, 5)
        self.assertIn("no rank made progress for", result.stderr)
        self.assertIn(f"rank on the {NODES} nodes", result.stderr)
        self.assertIn("where the ranks are, the odd ones out first:", result.stderr)
        # Every rank in one group (all stand in the same place), none missing.
        self.assertRegex(result.stderr, rf"ranks 0-{NODES - 1} \(")
        self.assertNotIn("no answer within", result.stderr)
        self.assertTrue(os.path.exists(self.path("term.0")), "the head's worker was not stopped")
        self.assert_head_gone(head)

    def test_gangrun_stacks_reads_every_rank_of_256_nodes(self):
        head = self.start_head_with(self.doctor_flags(None), "--sleep", SLEEP_FOREVER)
        swarm = Swarm(self, self.port, NODES - 1)
        swarm.wait_event("all_assigned", 0)
        self.wait_file("started.0", head)

        stacks = self.gangrun(["stacks", "--pid", head.pid], timeout=NODES_TIMEOUT,
                              env=harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET))
        self.assertExit(stacks, 0)
        self.assertRegex(stacks.stdout, rf"ranks 0-{NODES - 1} \(")
        self.assertIn("wait_for_work", stacks.stdout)
        self.assertNotIn("no answer", stacks.stdout + stacks.stderr)
        # Each node says so just after it answered, so every line is on its way: wait for them.
        answered = swarm.wait_answers(NODES - 1)
        self.assertEqual(sorted(line["node"] for line in answered), list(range(1, NODES)))
        self.assertEqual({line["why"] for line in answered}, {"asked"})

        swarm.send("fail 7")
        swarm.wait_event("all_done", 0)
        self.assertEqual(swarm.finish(), 1, swarm.stderr())
        self.assertExit(self.finish(head, timeout=NODES_TIMEOUT), 1)
        self.assert_head_gone(head)


if __name__ == "__main__":
    harness.main()
