"""Several nodes on one machine: one gangrun agent per "node", every agent on loopback.

Static rendezvous (node rank 0 hosts the store at --master_addr/--master_port) and c10d
(the first agent started can listen on the endpoint, so it hosts the store): the
environment of every worker with different worker counts per node, nodes started in either
order, one exit code for the whole job with the workers of every node stopped, restarts of
every node together, --report's "job" object, and a stop signal to one agent.

Every agent runs in a session of its own (GangrunTestCase.start); tearDown kills the
process group of any agent still running and fails the test, and the harness kills (and
fails on) any worker left behind. Each test uses a port of its own.
"""

import glob
import os
import re
import signal
import socket

import harness
import static_nodes
from harness import EVENT_TIMEOUT

LOOPBACK = static_nodes.LOOPBACK
HOST = socket.gethostname()  # the name every agent here reports for its node

# A worker that only gangrun should end sleeps far longer than any wait of a test: a
# teardown that does not come fails the test instead of ending by itself.
SLEEP_FOREVER = 10 * EVENT_TIMEOUT

# What the node of the root cause prints (lib/report's failure summary), and the one line
# every other node prints.
SUMMARY_HEADER = "Root cause (first observed failure):"


def other_node_line(rank, code, node_rank=1):
    # Every agent here has the same host name: the node rank and the address its link to the
    # store leaves from name the node.
    return (f"gangrun: error: the job ended on another node: rank {rank} on node {node_rank} ({HOST}, {LOOPBACK}) "
            f"failed (exit code {code}) (this node exits with {code})")


def complaints(stderr):
    """The lines of an agent's stderr that warn or report an error."""
    return [line for line in stderr.splitlines() if line.startswith(("gangrun: warning", "gangrun: error"))]


def node_round_line(stderr, round_number):
    """(first rank, last rank, world size, node, nodes) from an agent's
    "round N: ranks a-b of W (node g of G)" line for round ROUND_NUMBER, or None."""
    m = re.search(rf"^gangrun: round {round_number}: ranks (\d+)-(\d+) of (\d+) \(node (\d+) of (\d+)\)$", stderr,
                  re.MULTILINE)
    return tuple(int(g) for g in m.groups()) if m else None


class MultiNodeCase(harness.GangrunTestCase):
    def start(self, args, env=None):
        """Starts an agent with the job's secret, as every node of a real job gets it."""
        if env is None:
            env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET)
        return super().start(args, env=env)

    def tearDown(self):
        running = [proc for proc in self._started if proc.poll() is None]
        for proc in running:
            # Not reaped yet, so its pid is still the id of its own group.
            os.killpg(proc.pid, signal.SIGKILL)
        super().tearDown()
        if running:
            self.fail(f"agents still running at the end of the test (killed now): {[p.pid for p in running]}")

    # ---- starting agents

    def static_job(self, counts):
        """The static job of len(COUNTS) nodes (on loopback, with the job's secret)."""
        return static_nodes.StaticJob(self, len(counts))

    def start_static(self, counts, worker, extra=lambda node: (), order=None):
        """{node rank: agent} of a static job with COUNTS[i] workers on node i, started in
        ORDER (default: node 0 first); EXTRA(node) adds options to one node."""
        job = self.static_job(counts)
        agents = job.start_all(lambda node: ["--nproc_per_node", counts[node], *extra(node), *worker], order=order)
        return job.master_port, agents

    def c10d_agent(self, port, nnodes, count, worker, extra=()):
        return self.start(["--rdzv_backend", "c10d", "--rdzv_endpoint", f"{LOOPBACK}:{port}", "--rdzv_id", "mn",
                           "--nnodes", nnodes, "--nproc_per_node", count, *extra, *worker])

    def start_c10d(self, counts, worker, extra=()):
        """[agent] of a c10d job, one per entry of COUNTS; the first one hosts the store and
        is started (and seen hosting) before the others."""
        port = harness.free_port()
        agents = [self.c10d_agent(port, len(counts), counts[0], worker, extra)]
        self.wait_stderr(agents[0], f"hosting the store at {LOOPBACK}:{port}")
        agents += [self.c10d_agent(port, len(counts), count, worker, extra) for count in counts[1:]]
        return port, agents

    # ---- waiting and results

    def finish_all(self, agents):
        """{key: Result} of every agent of AGENTS (a dict or a list), waited for together."""
        return static_nodes.finish(self, agents if isinstance(agents, dict) else dict(enumerate(agents)))

    def assert_all_exit(self, results, code):
        for key, result in results.items():
            self.assertEqual(result.returncode, code, f"agent of node {key}: expected exit {code}" + result.describe())

    def assert_no_complaints(self, results):
        for key, result in results.items():
            self.assertEqual(complaints(result.stderr), [], f"agent of node {key}" + result.describe())

    def read_env(self, rank, restart=0):
        return self.read_json(self.path(f"env.{rank}.{restart}.json"))["env"]

    def assert_worker_envs(self, counts, port, restart=0, max_restarts=0, first_ranks=None):
        """Every worker's env.RANK.RESTART.json: node i has COUNTS[i] workers whose ranks
        start at FIRST_RANKS[i] (default: contiguous in node order)."""
        world = sum(counts)
        if first_ranks is None:
            first_ranks = [sum(counts[:node]) for node in range(len(counts))]
        for node, count in enumerate(counts):
            for local_rank in range(count):
                rank = first_ranks[node] + local_rank
                env = self.read_env(rank, restart)
                expected = {
                    "RANK": str(rank), "LOCAL_RANK": str(local_rank), "ROLE_RANK": str(rank),
                    "WORLD_SIZE": str(world), "ROLE_WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(count),
                    "GROUP_RANK": str(node), "GROUP_WORLD_SIZE": str(len(counts)),
                    "MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(port),
                    "TORCHELASTIC_USE_AGENT_STORE": harness.EXPECTED_USE_AGENT_STORE,
                    "TORCHELASTIC_RESTART_COUNT": str(restart), "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
                }
                actual = {name: env.get(name) for name in expected}
                self.assertEqual(actual, expected, f"worker of rank {rank} (node {node}, attempt {restart})")

    def env_worker(self, *more):
        return self.fake("--print-env", self.path("env.{rank}.{restart}.json"), *more)


class StaticEnvironment(MultiNodeCase):
    def run_static(self, counts, order=None):
        port, agents = self.start_static(counts, self.env_worker(), order=order)
        results = self.finish_all(agents)
        self.assert_all_exit(results, 0)
        self.assert_no_complaints(results)
        self.assert_worker_envs(counts, port)
        for node, result in results.items():
            first = sum(counts[:node])
            self.assertEqual(node_round_line(result.stderr, 0),
                             (first, first + counts[node] - 1, sum(counts), node, len(counts)), result.describe())

    def test_two_nodes_of_two_and_three_workers(self):
        self.run_static([2, 3])

    def test_three_nodes_of_two_one_and_three_workers(self):
        self.run_static([2, 1, 3])

    def test_nodes_started_before_the_host_wait_for_it(self):
        counts = [2, 3]
        job = self.static_job(counts)
        worker = self.env_worker()
        late = job.start(1, ["--nproc_per_node", counts[1], *worker])
        # Its first line (3 workers, OMP_NUM_THREADS unset) shows that it runs and is past
        # its start-up; with no store to join it must wait, start nothing and not end.
        self.wait_stderr(late, "OMP_NUM_THREADS is unset")
        self.assertIsNone(late.poll(), self.stderr_of(late))
        self.assertEqual(self.recorded_pids(), [], "a worker started before the host node came up")
        job.start(0, ["--nproc_per_node", counts[0], *worker])
        results = job.finish()
        self.assert_all_exit(results, 0)
        self.assert_no_complaints(results)
        self.assert_worker_envs(counts, job.master_port)


class StaticFailures(MultiNodeCase):
    def test_an_agent_of_another_job_is_turned_away_and_the_job_goes_on(self):
        job = self.static_job([1, 1])
        worker = ["--nproc_per_node", 1, *self.env_worker()]
        host = job.start(0, ["--rdzv_id", "job-a", *worker])
        self.wait_stderr(host, "hosting the store at")
        stranger = job.start(1, ["--rdzv_id", "job-b", *worker])
        refused = self.finish(stranger, timeout=EVENT_TIMEOUT)
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn("belongs to the job with --rdzv_id job-a, and this agent has --rdzv_id job-b",
                      refused.stderr)
        self.assertEqual(self.recorded_pids(), [], "the turned-away agent started a worker")
        job.start(1, ["--rdzv_id", "job-a", *worker])  # the member
        results = job.finish()
        self.assert_all_exit(results, 0)
        self.assertIn("turned away an agent of job job-b", results[0].stderr)

    def test_a_failed_worker_stops_every_node_and_every_agent_exits_with_its_code(self):
        counts = [2, 3]
        go = self.path("go")
        # Rank 3 (node 1) exits 7 once the test says so; every other worker sleeps.
        worker = self.fake("--touch", self.ready_file(), "--only-rank", 3, "--wait-file", go, EVENT_TIMEOUT,
                           "--only-rank", 3, "--exit", 7, "--sleep", SLEEP_FOREVER)
        _, agents = self.start_static(counts, worker)
        self.wait_ready(sum(counts))
        pids = self.wait_pid_files(sum(counts))
        with open(go, "w"):
            pass
        results = self.finish_all(agents)
        self.assert_all_exit(results, 7)
        self.assert_dead([pids[r] for r in (0, 1, 2, 4)], what="workers of both nodes after rank 3 failed")

        root, other = results[1].stderr, results[0].stderr
        self.assertIn(SUMMARY_HEADER, root, results[1].describe())
        self.assertRegex(root, r"(?m)^\s*rank:\s+3 \(local_rank: 1\)$", results[1].describe())
        # Both agents have this host's name: the summary names the node by rank and address.
        self.assertIn(f"\n  node:       node 1 ({HOST}, {LOOPBACK})\n", root, results[1].describe())
        self.assertNotIn("the job ended on another node", root, results[1].describe())
        self.assertIn(other_node_line(3, 7), other.splitlines(), results[0].describe())
        self.assertNotIn(SUMMARY_HEADER, other, results[0].describe())

    def test_report_of_every_node_names_the_job_and_where_its_root_cause_was(self):
        counts = [1, 2]
        # Rank 2 (node 1) exits 4 once rank 0 (node 0) runs; the others sleep.
        worker = self.fake("--touch", self.ready_file(), "--only-rank", 2, "--wait-file", self.path("ready.0"),
                           EVENT_TIMEOUT, "--only-rank", 2, "--exit", 4, "--sleep", SLEEP_FOREVER)
        _, agents = self.start_static(counts, worker,
                                      extra=lambda node: ["--report", self.path(f"report.{node}.json")])
        results = self.finish_all(agents)
        self.assert_all_exit(results, 4)
        for node, here in ((0, False), (1, True)):
            doc = self.read_json(self.path(f"report.{node}.json"))
            self.assertIn("job", doc, f"report of node {node}: {sorted(doc)}")
            job = doc["job"]
            self.assertEqual(job.get("exit_code"), 4, f"node {node}: {job}")
            self.assertIs(job.get("root_cause_here"), here, f"node {node}: {job}")
            self.assertIn("rank 2", job.get("message", ""), f"node {node}: {job}")

    def run_signal_to_one_agent(self, signalled):
        counts = [1, 2]
        worker = self.fake("--touch", self.ready_file(), "--sleep", SLEEP_FOREVER)
        _, agents = self.start_static(counts, worker)
        self.wait_ready(sum(counts))
        pids = self.wait_pid_files(sum(counts))
        os.kill(agents[signalled].pid, signal.SIGTERM)
        results = self.finish_all(agents)
        for node, result in results.items():
            # The agent told to stop dies of the signal as on one node (test_signals); the
            # others exit with the shell's code for it.
            expected = -int(signal.SIGTERM) if node == signalled else 128 + int(signal.SIGTERM)
            self.assertEqual(result.returncode, expected, f"agent of node {node}" + result.describe())
        self.assert_dead(pids.values(), what=f"workers after SIGTERM to the agent of node {signalled}")

    def test_sigterm_to_the_host_agent_stops_every_node(self):
        self.run_signal_to_one_agent(0)

    def test_sigterm_to_another_agent_stops_every_node(self):
        self.run_signal_to_one_agent(1)


class StaticRestarts(MultiNodeCase):
    def test_every_node_restarts_together_and_the_second_round_succeeds(self):
        counts = [2, 3]
        # Attempt 0: rank 4 (node 1) exits 5 once rank 0 (node 0) runs; the others sleep.
        # Attempt 1: every worker exits 0.
        worker = self.env_worker(
            "--only-rank", 4, "--if-restart-below", 1, "--wait-file", self.path("env.0.0.json"), EVENT_TIMEOUT,
            "--only-rank", 4, "--if-restart-below", 1, "--exit", 5,
            "--if-restart-below", 1, "--sleep", SLEEP_FOREVER)
        port, agents = self.start_static(counts, worker, extra=lambda node: ["--max_restarts", 2])
        results = self.finish_all(agents)
        self.assert_all_exit(results, 0)
        self.assert_worker_envs(counts, port, restart=1, max_restarts=2)
        self.assertEqual(glob.glob(self.path("env.*.2.json")), [], "a third attempt ran")
        self.assertIn("restarting every node (1 of 2 restarts)", results[0].stderr, results[0].describe())
        for node, result in results.items():
            first = sum(counts[:node])
            self.assertEqual(node_round_line(result.stderr, 1),
                             (first, first + counts[node] - 1, sum(counts), node, len(counts)), result.describe())
            self.assertIsNone(node_round_line(result.stderr, 2), result.describe())

    def test_a_worker_that_always_fails_ends_the_job_after_every_restart_on_every_node(self):
        counts = [2, 3]
        # Every attempt: rank 4 (node 1) exits 9 once rank 0 (node 0) has started; the
        # others sleep. Every worker notes its attempt first.
        started = self.path("started.{rank}.{restart}")
        worker = self.fake("--record", self.path("records"), "--touch", started,
                           "--only-rank", 4, "--wait-file", self.path("started.0.{restart}"), EVENT_TIMEOUT,
                           "--only-rank", 4, "--exit", 9, "--sleep", SLEEP_FOREVER)
        _, agents = self.start_static(counts, worker, extra=lambda node: ["--max_restarts", 2])
        results = self.finish_all(agents)
        self.assert_all_exit(results, 9)
        rounds = re.findall(r"(?m)^gangrun: rendezvous: round (\d+) \(restart count (\d+)\)", results[0].stderr)
        self.assertEqual(rounds, [("0", "0"), ("1", "1"), ("2", "2")], results[0].describe())
        with open(self.path("records")) as f:
            records = f.read()
        for rank in (0, 4):
            attempts = re.findall(rf"(?m)^rank={rank} .*restart=(\d+)", records)
            self.assertEqual(attempts, ["0", "1", "2"], f"attempts of rank {rank}:\n{records}")
        self.assertIn(SUMMARY_HEADER, results[1].stderr, results[1].describe())
        self.assertIn(other_node_line(4, 9), results[0].stderr.splitlines(), results[0].describe())


class C10d(MultiNodeCase):
    def c10d_first_ranks(self, results, counts):
        """The first rank of each agent (in start order) from its round 0 line, checked
        against COUNTS; c10d orders nodes by host name, then address and agent id."""
        firsts = []
        for key, result in results.items():
            line = node_round_line(result.stderr, 0)
            self.assertIsNotNone(line, result.describe())
            first, last, world, node, nodes = line
            self.assertEqual((last - first + 1, world, nodes), (counts[key], sum(counts), len(counts)),
                             result.describe())
            firsts.append((node, first))
        nodes = sorted(firsts)
        self.assertEqual([node for node, _ in nodes], list(range(len(counts))), "node ranks")
        return firsts

    def test_two_nodes_of_two_and_three_workers(self):
        counts = [2, 3]
        port, agents = self.start_c10d(counts, self.env_worker())
        results = self.finish_all(agents)
        self.assert_all_exit(results, 0)
        self.assert_no_complaints(results)
        firsts = self.c10d_first_ranks(results, counts)
        # Ranks follow the node order: the node of group rank 0 has ranks from 0 on.
        by_node = sorted((node, first, counts[key]) for key, (node, first) in enumerate(firsts))
        offset = 0
        for node, first, count in by_node:
            self.assertEqual(first, offset, f"node {node}: ranks not contiguous in node order")
            offset += count
        # assert_worker_envs wants the counts in node order.
        node_counts = [count for _, _, count in by_node]
        self.assert_worker_envs(node_counts, port)

    def test_every_node_restarts_together(self):
        # Attempt 0: the worker of the agent started second exits 5 once a worker of the
        # host's node has noted its environment; the host's sleeps. Attempt 1: both succeed.
        port = harness.free_port()
        host_started = self.path("host_started")
        env_file = self.path("env.{rank}.{restart}.json")
        sleeper = self.fake("--print-env", env_file, "--touch", host_started,
                            "--if-restart-below", 1, "--sleep", SLEEP_FOREVER)
        failer = self.fake("--print-env", env_file, "--if-restart-below", 1, "--wait-file", host_started, EVENT_TIMEOUT,
                           "--if-restart-below", 1, "--exit", 5)
        extra = ["--max_restarts", 1]
        host = self.c10d_agent(port, 2, 2, sleeper, extra)
        self.wait_stderr(host, "hosting the store")
        other = self.c10d_agent(port, 2, 1, failer, extra)
        results = self.finish_all({0: host, 1: other})
        self.assert_all_exit(results, 0)
        self.assertIn("restarting every node (1 of 1 restarts)", results[0].stderr, results[0].describe())
        for rank in range(3):
            env = self.read_env(rank, restart=1)
            self.assertEqual((env["TORCHELASTIC_RESTART_COUNT"], env["WORLD_SIZE"], env["GROUP_WORLD_SIZE"]),
                             ("1", "3", "2"), f"rank {rank} in the second round")
        self.assertEqual(glob.glob(self.path("env.*.2.json")), [], "a third attempt ran")

    def test_a_failed_worker_ends_the_job_on_every_node_with_its_code(self):
        counts = [1, 1]
        go = self.path("go")
        # The worker of the agent started second exits 6 when the test says so.
        sleeper = self.fake("--touch", self.ready_file(), "--sleep", SLEEP_FOREVER)
        failer = self.fake("--touch", self.ready_file(), "--wait-file", go, EVENT_TIMEOUT, "--exit", 6)
        port = harness.free_port()
        host = self.c10d_agent(port, 2, 1, sleeper)
        self.wait_stderr(host, "hosting the store")
        other = self.c10d_agent(port, 2, 1, failer)
        self.wait_ready(2)
        pids = self.wait_pid_files(2)
        with open(go, "w"):
            pass
        results = self.finish_all({"host": host, "other": other})
        self.assert_all_exit(results, 6)
        self.assert_dead(pids.values(), what="workers")
        self.assertIn(SUMMARY_HEADER, results["other"].stderr, results["other"].describe())
        self.assertRegex(results["host"].stderr,
                         rf"(?m)^gangrun: error: the job ended on another node: rank \d on node \d "
                         rf"\({re.escape(HOST)}, [0-9a-f.:]+\) failed "
                         r"\(exit code 6\) \(this node exits with 6\)$", results["host"].describe())


if __name__ == "__main__":
    harness.main()
