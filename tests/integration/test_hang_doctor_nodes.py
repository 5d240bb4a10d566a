"""The gang doctor across nodes (docs/hangs.md, "Across nodes"): two static nodes on loopback,
two ranks each, the hung rank 2 on the second node. Every node is given the same --hang-timeout
and --on-hang; node 0, the lead, watches the whole gang's silence, has every node read its own
ranks, prints one summary of all of them, and with --on-hang stop every agent exits 5 with
nothing left running. `gangrun stacks` on either node reads every rank of every node, stopping
nothing.

TorchHangAcrossNodes runs real PyTorch gloo on CPU (GANGRUN_TEST_PYTHON: Debian's torch 1.13,
or 2.x as integration.test_hang_doctor_nodes.torch2); StacksAcrossNodes needs no torch. Both
need the py-spy beside GANGRUN_TEST_PEER_PYTHON, and skip without it. The workers, the parsers
of the summary and the checks of a STACKS record are test_hang_doctor.py's; the agents are
started as test_multinode.py starts them.

Every wait is for an event (a file, gangrun's end, what `gangrun stacks` prints) and has a
timeout.
"""

import json
import os
import signal
import subprocess

import harness
import static_nodes
from harness import EVENT_TIMEOUT, PEER_PYTHON, TEST_PYTHON
from test_hang_doctor import (GROUP_LINE, HANG_EXIT, HUNG_RANK, JOB_TIMEOUT, RUN_DIR, SCRIPT, WORLD, HangTestCase,
                              functions, hang_groups_of, path_without_py_spy, py_spy, rank_set)
from test_multinode import MultiNodeCase

# Ranks per node (WORLD in all): ranks 0-1 on node 0, ranks 2-3 on node 1, so the hung rank 2
# is on the second node.
COUNTS = [2, 2]
NODE_RANKS = {0: {0, 1}, 1: {2, 3}}
MERGED_HEAD = "where the ranks are, the odd ones out first:"


def merged_groups(test, console, describe=""):
    """[(ranks, where, what)] of the group lines right after the first MERGED_HEAD in CONSOLE
    (the lead's summary of every node's ranks)."""
    test.assertIn(MERGED_HEAD, console, "no merged summary" + describe)
    groups = []
    for line in console[console.index(MERGED_HEAD):].splitlines()[1:]:
        match = GROUP_LINE.match(line)
        if not match:
            break
        groups.append((rank_set(match.group(1)), match.group(2), match.group(3)))
    test.assertTrue(groups, f"no rank lines after {MERGED_HEAD!r}" + describe)
    return groups


class NodesCase(MultiNodeCase, HangTestCase):
    """Two static agents on loopback, each with its own report and log directory."""

    def node_report(self, node):
        return self.path(f"report.{node}.json")

    def start_nodes(self, worker, extra=lambda node: (), env=None):
        """{node rank: agent} of a static job of COUNTS, node 0 first; the agents get the
        job's secret (and ENV, when given)."""
        env = {**(env if env is not None else harness.clean_env()), "GANGRUN_JOB_SECRET": harness.TEST_JOB_SECRET}
        job = static_nodes.StaticJob(self, len(COUNTS), env=env)
        return job.start_all(lambda node: ["--nproc_per_node", COUNTS[node], *extra(node), *worker])

    def hang_record(self, node, described):
        """The "hang" of the last attempt in node NODE's report."""
        attempt = self.read_json(self.node_report(node))["attempts"][-1]
        self.assertIn("hang", attempt, f"node {node}'s report: {sorted(attempt)}" + described)
        return attempt["hang"]

    def both(self, agents):
        """The stderr of every agent so far, for a failure message."""
        return "".join(f"\n--- stderr of the agent of node {node} (tail) ---\n{self.stderr_of(agent)[-3000:]}"
                       for node, agent in agents.items())

    def finish_nodes(self, agents, timeout=JOB_TIMEOUT):
        """{node: Result} of every agent, all waited for together for at most TIMEOUT seconds;
        fails with every agent's output (the ones still running killed) when one has not ended."""
        return static_nodes.finish(self, agents, timeout)

    def wait_node_pid_files(self, agents):
        """{rank: pid} once every rank of every node has recorded its pid; fails with both
        agents' stderr when an agent ends first or the files do not come."""
        def all_there():
            pids = self.pid_files()
            return pids if len(pids) >= WORLD or any(a.poll() is not None for a in agents.values()) else None
        pids = harness.wait_for(all_there, EVENT_TIMEOUT, f"{WORLD} worker pid files")
        self.assertEqual(set(pids), set(range(WORLD)), "an agent ended before its workers started" + self.both(agents))
        return pids


class TorchHangAcrossNodes(NodesCase):
    def setUp(self):
        harness.require_torch()
        self.py_spy = py_spy()
        super().setUp()

    def worker(self, mode):
        return ["--python", TEST_PYTHON, SCRIPT, self.pid_dir, mode]

    def hang_options(self, node, action):
        return ["--hang-timeout", 3, "--on-hang", action, "--stack-tool", self.py_spy,
                "--report", self.node_report(node), "--log-dir", self.path(f"logs.{node}")]

    def test_the_hung_rank_on_the_second_node_is_named_and_every_node_stops(self):
        agents = self.start_nodes(self.worker("hang"), extra=lambda node: self.hang_options(node, "stop"))
        results = self.finish_nodes(agents)
        described = "".join(f"\n=== agent of node {node}:{result.describe()}" for node, result in results.items())
        for node, result in results.items():
            self.assertEqual(result.returncode, HANG_EXIT, f"agent of node {node}: expected exit {HANG_EXIT}"
                             + described)
        pids = self.pid_files()
        self.assertEqual(set(pids), set(range(WORLD)), described)

        # The lead's one summary: rank 2 of node 1 alone with load_batch, first, at its pid;
        # the ranks of both nodes in its groups.
        groups = merged_groups(self, self.console(results[0]), described)
        with_load_batch = [group for group in groups if "load_batch" in group[2]]
        self.assertEqual(set().union(*(g[0] for g in with_load_batch)), {HUNG_RANK}, f"{groups}{described}")
        self.assertEqual(groups[0][0], {HUNG_RANK}, f"the odd one out is not first: {groups}{described}")
        self.assertIn(f"pid {pids[HUNG_RANK]}", groups[0][1], groups)
        self.assertEqual(set().union(*(g[0] for g in groups)), set(range(WORLD)), f"{groups}{described}")
        # The other node says that it read its ranks' stacks (in words not checked here).
        self.assertTrue(any(line.startswith("gangrun: warning") and "stacks" in line and "hang" in line
                            for line in self.console(results[1]).splitlines()),
                        "node 1 did not say its stacks were read" + described)

        # The lead's report holds every rank of every node; rank 2's stack is node 1's reading.
        hang = self.hang_record(0, described)
        self.assertEqual(hang["action"], "stop", hang)
        self.assertEqual(hang["timeout_s"], 3.0, hang)
        self.assertGreaterEqual(hang["silent_for_s"], 2.9, hang)
        by_rank = self.assert_stacks(hang["stacks"], range(WORLD), pids)
        self.assertEqual(set(by_rank), set(range(WORLD)), sorted(by_rank))
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]), by_rank[HUNG_RANK])
        for rank in set(range(WORLD)) - {HUNG_RANK}:
            self.assertIn("all_reduce", functions(by_rank[rank]), by_rank[rank])
            self.assertNotIn("load_batch", functions(by_rank[rank]), by_rank[rank])
        self.assertTrue(any("load_batch" in line and "rank 2 (" in line for line in hang["stacks"]["summary"]),
                        hang["stacks"]["summary"])
        run_dir = RUN_DIR.search(self.console(results[0]))
        self.assertIsNotNone(run_dir, "the lead did not print the run's log directory" + described)
        stacks_file = os.path.join(run_dir.group(1), "attempt_0", "hang-stacks.txt")
        self.assertTrue(os.path.isfile(stacks_file), f"no {stacks_file}" + described)
        with open(stacks_file) as f:
            self.assertIn("load_batch", f.read(), f"{stacks_file} lacks node 1's hung rank")
        self.assertEqual(hang["stacks"]["file"], stacks_file)

        # Node 1's report holds the ranks it read: its own.
        other = self.hang_record(1, described)
        by_rank = self.assert_stacks(other["stacks"], NODE_RANKS[1], pids)
        self.assertEqual(set(by_rank), NODE_RANKS[1], sorted(by_rank))
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]), by_rank[HUNG_RANK])

        self.assert_dead(pids.values(), what="workers of both nodes after --on-hang stop")

    def test_on_hang_restart_restarts_every_node(self):
        # The first attempt hangs, the second does not: both nodes run it to the end.
        agents = self.start_nodes(self.worker("hang-first-attempt"),
                                  extra=lambda node: [*self.hang_options(node, "restart"), "--max-restarts", 1])
        results = self.finish_nodes(agents)
        described = "".join(f"\n=== agent of node {node}:{result.describe()}" for node, result in results.items())
        for node, result in results.items():
            self.assertEqual(result.returncode, 0, f"agent of node {node}" + described)
            attempts = self.read_json(self.node_report(node))["attempts"]
            self.assertEqual(len(attempts), 2, f"node {node}'s attempts" + described)
            self.assertEqual(attempts[0]["hang"]["action"], "restart", attempts[0]["hang"])
            self.assertNotIn("hang", attempts[1])
        groups = merged_groups(self, self.console(results[0]), described)
        self.assertEqual(groups[0][0], {HUNG_RANK}, f"the odd one out is not first: {groups}{described}")


class HungWhereTheLeadIsDone(NodesCase):
    """Every rank but rank 2 exits 0 once it is up (no torch): the lead's ranks are done while
    rank 2 hangs on node 1. The lead goes on watching node 1's silence, so the hang is still
    found, read and stopped: both agents exit 5, and rank 2 is named in load_batch."""

    def setUp(self):
        self.py_spy = py_spy()
        super().setUp()

    def test_the_lead_watches_on_after_its_own_ranks_are_done(self):
        agents = self.start_nodes(
            ["--python", TEST_PYTHON, SCRIPT, self.pid_dir, "lead-done"],
            extra=lambda node: ["--hang-timeout", 3, "--on-hang", "stop", "--stack-tool", self.py_spy,
                                "--report", self.node_report(node)])
        results = self.finish_nodes(agents)
        described = "".join(f"\n=== agent of node {node}:{result.describe()}" for node, result in results.items())
        for node, result in results.items():
            self.assertEqual(result.returncode, HANG_EXIT, f"agent of node {node}: expected exit {HANG_EXIT}"
                             + described)
        self.assertEqual(merged_groups(self, self.console(results[0]), described)[0][0], {HUNG_RANK}, described)
        by_rank = self.assert_stacks(self.hang_record(1, described)["stacks"], {HUNG_RANK}, self.pid_files())
        self.assertIn("load_batch", functions(by_rank[HUNG_RANK]), by_rank[HUNG_RANK])
        self.assert_dead(self.pid_files().values(), what="workers of both nodes after --on-hang stop")


class StacksAcrossNodes(NodesCase):
    """`gangrun stacks` from another terminal, given either agent of a two-node job: every
    rank of both nodes, grouped, nothing stopped."""

    def test_gangrun_stacks_reads_every_node(self):
        py_spy()  # found beside PEER_PYTHON, the workers' interpreter
        # The job registry in the test's own directory (both agents register there).
        env = harness.clean_env(TMPDIR=self.tmp, PATH=path_without_py_spy())
        env.pop("XDG_RUNTIME_DIR", None)
        agents = self.start_nodes(["--python", PEER_PYTHON, SCRIPT, self.pid_dir, "idle"], env=env)
        pids = self.wait_node_pid_files(agents)

        def stacks(agent, *args):
            done = subprocess.run([harness.GANGRUN, "stacks", "--pid", str(agent.pid), *args],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                                  timeout=EVENT_TIMEOUT)
            self.assertEqual(done.returncode, 0, f"gangrun stacks --pid {agent.pid}: {done.stderr}"
                             + self.both(agents))
            return done.stdout

        # Rank 2 (node 1) prints a line, then enters load_batch: read until it is there.
        harness.wait_for(lambda: "load_batch" in stacks(agents[1]), EVENT_TIMEOUT, "rank 2 in load_batch")
        for node in (1, 0):
            with self.subTest(asked=f"the agent of node {node}"):
                text = stacks(agents[node])
                groups = hang_groups_of(self, text)
                self.assertEqual(groups[0][0], {HUNG_RANK}, f"the odd one out is not first: {groups}\n{text}")
                self.assertIn("load_batch", groups[0][2], text)
                self.assertEqual(set().union(*(g[0] for g in groups)), set(range(WORLD)), text)
                doc = json.loads(stacks(agents[node], "--json"))
                by_rank = self.assert_stacks(doc, range(WORLD), pids)
                self.assertEqual(set(by_rank), set(range(WORLD)), sorted(by_rank))
                self.assertIn("load_batch", functions(by_rank[HUNG_RANK]), by_rank[HUNG_RANK])
        for node, agent in agents.items():
            self.assertIsNone(agent.poll(), f"reading the stacks stopped the agent of node {node}"
                              + self.both(agents))
        for agent in agents.values():
            agent.send_signal(signal.SIGTERM)
        self.finish_nodes(agents, timeout=EVENT_TIMEOUT)
        self.assert_dead(pids.values(), what="workers of both nodes")


if __name__ == "__main__":
    harness.main()
