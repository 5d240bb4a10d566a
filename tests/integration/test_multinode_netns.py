"""Nodes that die or drop off the network, and c10d jobs that grow, shrink or turn a node
away: one gangrun agent per simulated node (network namespaces, netns_nodes.Nodes).

A non-host agent killed: the others stop their workers and exit 3 naming the lost node by
node rank, host name and address, which tell the nodes apart even when every host has the
same name.
The host agent killed: the others exit 3, having lost the rendezvous store. A cut cable:
TCP keep-alive finds it on both sides, and both exit 3. c10d --nnodes MIN:MAX: a late node
starts a new, larger round without using a restart; a lost node with a restart left
leaves a smaller round that finishes; an agent beyond MAX waits as a spare and exits with
the job's code.

Every process runs in a node (Nodes.popen), each in a process group of its own; the
nodes' removal at the end of each `with` block kills whatever is left in them. Skipped,
with the reason, where network namespaces cannot be made.
"""

import glob
import json
import os
import signal
import time

import harness
import netns_nodes
import static_nodes
from harness import EVENT_TIMEOUT

PORT = 29500  # each node has its own network: any port is free there
SLEEP_FOREVER = 10 * EVENT_TIMEOUT  # longer than any wait: only gangrun ends these workers
LOST_RENDEZVOUS = 3  # the exit code of an agent that lost the job's rendezvous
# Keep-alive probes every second, two unanswered ones end the link: a cut is found in
# seconds instead of the default's.
QUICK_KEEP_ALIVE = "keep_alive_interval=1,keep_alive_max_attempt=2"


class NetnsCase(harness.GangrunTestCase):
    def setUp(self):
        reason = netns_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    # ---- agents on nodes

    def start_agent(self, nodes, node, args, hostname=None):
        """Starts gangrun ARGS on node NODE with its output in files, as GangrunTestCase.start
        does (so that GangrunTestCase.finish waits for it). HOSTNAME: the node's host name
        instead of nodeN (each node's UTS namespace is its own); the shell execs gangrun, so
        the pid is still the agent's."""
        index = len(self._started)
        argv = [harness.GANGRUN, *args]
        if hostname is not None:
            argv = ["sh", "-c", 'hostname "$0" && exec "$@"', hostname, *argv]
        with open(self.path(f"gangrun.{index}.out"), "wb") as out, \
                open(self.path(f"gangrun.{index}.err"), "wb") as err:
            proc = nodes.popen(node, argv, stdout=out, stderr=err, env=harness.clean_env(), cwd=self.tmp)
        proc.argv, proc.index, proc.t0 = proc.args, index, time.monotonic()
        self._started.append(proc)
        return proc

    def static_agents(self, nodes, counts, worker, extra=(), hostname=None):
        """{node: agent} of a static job with COUNTS[i-1] workers on node i; node 1 hosts."""
        job = static_nodes.StaticJob(self, len(counts), nodes=nodes, master_port=PORT, env=harness.clean_env(),
                                     hostname=hostname)
        agents = job.start_all(lambda node_rank: ["--nproc_per_node", counts[node_rank], *extra, *worker])
        return {node_rank + 1: agent for node_rank, agent in agents.items()}

    def c10d_agent(self, nodes, node, nnodes, worker, conf="", extra=()):
        args = ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"{nodes.address(1)}:{PORT}", "--rdzv_id", "netns",
                "--nnodes", nnodes, "--nproc_per_node", 1, *extra]
        if conf:
            args += ["--rdzv_conf", conf]
        return self.start_agent(nodes, node, [*args, *worker])

    def c10d_host(self, nodes, nnodes, worker, conf="", extra=()):
        """The agent of node 1, seen hosting the store at the endpoint."""
        host = self.c10d_agent(nodes, 1, nnodes, worker, conf, extra)
        self.wait_stderr(host, f"hosting the store at {nodes.address(1)}:{PORT}")
        return host

    def finish_all(self, agents):
        return static_nodes.finish(self, agents)

    def sigkill(self, agent):
        # The node's exec replaced itself with gangrun: the pid is the agent's.
        self.assertIn(harness.GANGRUN, harness.proc_cmdline(agent.pid))
        os.kill(agent.pid, signal.SIGKILL)

    def assert_exit(self, result, code, node, text=None):
        self.assertEqual(result.returncode, code, f"agent of node {node}" + result.describe())
        if text is not None:
            self.assertIn(text, result.stderr, f"agent of node {node}" + result.describe())

    # ---- workers that note their environment: env.<pid>.json

    def env_worker(self, *more):
        return self.fake("--print-env", self.path("env.{pid}.json"), *more)

    def worker_envs(self):
        envs = []
        for name in glob.glob(self.path("env.*.json")):
            with open(name) as f:
                envs.append(json.load(f)["env"])
        return envs

    def wait_round_envs(self, group_world_size, count, restart=0):
        """The COUNT worker environments of a round of GROUP_WORLD_SIZE nodes and restart
        count RESTART, once all have been written."""
        def round_envs():
            envs = [env for env in self.worker_envs() if env.get("GROUP_WORLD_SIZE") == str(group_world_size)
                    and env.get("TORCHELASTIC_RESTART_COUNT") == str(restart)]
            return envs if len(envs) >= count else None
        try:
            return harness.wait_for(round_envs, EVENT_TIMEOUT,
                                    f"{count} workers of a round of {group_world_size} nodes (restart count {restart})")
        except AssertionError as timed_out:
            # A round that never forms is told by the agents, not by the workers' files.
            raise AssertionError(f"{timed_out}{self.agents_so_far()}") from None

    def agents_so_far(self):
        """Every started agent's output up to now, whether it still runs or not."""
        return "".join(self._started_result(proc).describe() for proc in self._started)

    def assert_one_worker_per_node_envs(self, envs, count, nodes):
        """ENVS: one worker per node on nodes 1..COUNT, node i with group rank and rank i-1
        (c10d orders nodes by host name), meeting at the endpoint on node 1 of NODES."""
        world = str(count)
        got = sorted((env["GROUP_RANK"], env["RANK"], env["WORLD_SIZE"], env["ROLE_WORLD_SIZE"],
                      env["LOCAL_WORLD_SIZE"], env["MASTER_ADDR"], env["MASTER_PORT"]) for env in envs)
        self.assertEqual(got, [(str(i), str(i), world, world, "1", nodes.address(1), str(PORT)) for i in range(count)])


class LostNodes(NetnsCase):
    def test_a_killed_agent_ends_the_job_on_the_other_nodes_with_lost_the_node(self):
        counts = [1, 1, 2]
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = self.static_agents(nodes, counts, self.fake("--touch", self.ready_file(), "--sleep",
                                                                 SLEEP_FOREVER))
            self.wait_ready(sum(counts))
            pids = self.wait_pid_files(sum(counts))
            self.sigkill(agents[3])
            results = self.finish_all(agents)
            self.assertEqual(results[3].returncode, -int(signal.SIGKILL), results[3].describe())
            for node in (1, 2):
                self.assert_exit(results[node], LOST_RENDEZVOUS, node, f"lost node 2 (node3, {nodes.address(3)}): ")
            self.assert_dead(pids.values(), what="workers of every node (node 3's too) after its agent was killed")

    def test_a_lost_node_is_named_by_node_rank_and_address_when_every_host_has_one_name(self):
        # As on cloud images or containers that all call themselves "vm": the host name
        # alone cannot say which node was lost.
        counts = [1, 1, 1]
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = self.static_agents(nodes, counts, self.fake("--touch", self.ready_file(), "--sleep",
                                                                 SLEEP_FOREVER), hostname="vm")
            self.wait_ready(sum(counts))
            pids = self.wait_pid_files(sum(counts))
            self.sigkill(agents[2])
            results = self.finish_all(agents)
            self.assertEqual(results[2].returncode, -int(signal.SIGKILL), results[2].describe())
            lost = f"lost node 1 (vm, {nodes.address(2)}): its agent died or its network is cut off"
            # The store's host says it, and the other node hears it as the job's end.
            self.assert_exit(results[1], LOST_RENDEZVOUS, 1, f"rendezvous: round 0 ends: {lost}")
            self.assert_exit(results[3], LOST_RENDEZVOUS, 3, lost)
            self.assertIn(f"rendezvous: lost the agent on node 1 (vm, {nodes.address(2)})", results[1].stderr,
                          results[1].describe())
            # The round named every node the same way.
            self.assertIn("3 nodes, world size 3: " + "; ".join(
                f"node {i} (vm, {nodes.address(i + 1)}): rank {i}" for i in range(3)), results[1].stderr,
                results[1].describe())
            self.assert_dead(pids.values(), what="workers of every node after node 2's agent was killed")

    def test_a_killed_host_agent_ends_the_job_on_the_other_nodes_with_lost_the_store(self):
        # An agent that loses the store while its workers run stops them and exits 3 (it
        # stopped them itself, so it must not die of the SIGTERM it sent).
        counts = [1, 1, 1]
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = self.static_agents(nodes, counts, self.fake("--touch", self.ready_file(), "--sleep",
                                                                 SLEEP_FOREVER))
            self.wait_ready(sum(counts))
            pids = self.wait_pid_files(sum(counts))
            self.sigkill(agents[1])
            results = self.finish_all(agents)
            self.assertEqual(results[1].returncode, -int(signal.SIGKILL), results[1].describe())
            for node in (2, 3):
                self.assert_exit(results[node], LOST_RENDEZVOUS, node,
                                 f"lost the rendezvous store at {nodes.address(1)}:{PORT}")
            self.assert_dead(pids.values(), what="workers of every node after the host agent was killed")

    def test_a_cut_cable_ends_the_job_on_both_sides(self):
        counts = [1, 1]
        with netns_nodes.Nodes(self, 2) as nodes:
            agents = self.static_agents(nodes, counts, self.fake("--touch", self.ready_file(), "--sleep",
                                                                 SLEEP_FOREVER),
                                        extra=["--rdzv_conf", QUICK_KEEP_ALIVE])
            self.wait_ready(sum(counts))
            pids = self.wait_pid_files(sum(counts))
            nodes.cut(2)
            results = self.finish_all(agents)
            self.assert_exit(results[1], LOST_RENDEZVOUS, 1, f"lost node 1 (node2, {nodes.address(2)}): ")
            self.assert_exit(results[2], LOST_RENDEZVOUS, 2, f"lost the rendezvous store at {nodes.address(1)}:{PORT}")
            self.assert_dead(pids.values(), what="workers on both sides of the cut")


class ElasticC10d(NetnsCase):
    def test_a_late_node_starts_a_larger_round_without_a_restart(self):
        done = self.path("done")
        worker = self.env_worker("--wait-file", done, EVENT_TIMEOUT)
        conf = "last_call_timeout=1"
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = {1: self.c10d_host(nodes, "2:3", worker, conf)}
            agents[2] = self.c10d_agent(nodes, 2, "2:3", worker, conf)
            self.assert_one_worker_per_node_envs(self.wait_round_envs(2, 2), 2, nodes)
            agents[3] = self.c10d_agent(nodes, 3, "2:3", worker, conf)
            self.assert_one_worker_per_node_envs(self.wait_round_envs(3, 3), 3, nodes)
            with open(done, "w"):
                pass
            results = self.finish_all(agents)
            for node, result in results.items():
                # "round N" on an agent's own line counts the rounds that node ran (node 3
                # ran one), so only the ranks are compared.
                self.assert_exit(result, 0, node, f": ranks {node - 1}-{node - 1} of 3 (node {node - 1} of 3)")
            self.assertIn("rendezvous: round 1 (restart count 0): 3 nodes, world size 3", results[1].stderr,
                          results[1].describe())
            self.assertEqual(len(self.worker_envs()), 5, "workers started beyond the two rounds")

    def test_a_lost_node_leaves_a_smaller_round_that_finishes(self):
        done = self.path("done")
        worker = self.env_worker("--wait-file", done, EVENT_TIMEOUT)
        conf = "last_call_timeout=1"
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = {1: self.c10d_host(nodes, "2:3", worker, conf, ["--max_restarts", 1])}
            for node in (2, 3):
                agents[node] = self.c10d_agent(nodes, node, "2:3", worker, conf, ["--max_restarts", 1])
            self.assert_one_worker_per_node_envs(self.wait_round_envs(3, 3), 3, nodes)
            pids = self.wait_pid_files(3)
            self.sigkill(agents[3])
            self.assert_one_worker_per_node_envs(self.wait_round_envs(2, 2, restart=1), 2, nodes)
            with open(done, "w"):
                pass
            results = self.finish_all(agents)
            self.assertEqual(results[3].returncode, -int(signal.SIGKILL), results[3].describe())
            for node in (1, 2):
                rank = node - 1
                self.assert_exit(results[node], 0, node, f"round 1: ranks {rank}-{rank} of 2 (node {rank} of 2)")
            self.assert_dead([pids[2]], what="the worker of the killed agent")

    def test_an_agent_beyond_max_waits_as_a_spare_and_exits_with_the_job(self):
        go = self.path("go")
        # The workers of the one round fail with 6 when the test says so.
        worker = self.env_worker("--wait-file", go, EVENT_TIMEOUT, "--exit", 6)
        with netns_nodes.Nodes(self, 3) as nodes:
            agents = {1: self.c10d_host(nodes, "1:2", worker)}
            agents[2] = self.c10d_agent(nodes, 2, "1:2", worker)
            self.wait_round_envs(2, 2)
            agents[3] = self.c10d_agent(nodes, 3, "1:2", worker)
            self.wait_stderr(agents[3], "waiting for the next")
            with open(go, "w"):
                pass
            results = self.finish_all(agents)
            for node, result in results.items():
                self.assert_exit(result, 6, node)
            self.assertIn(f"rendezvous: node3 ({nodes.address(3)}) waits as a spare for the next round", results[1].stderr,
                          results[1].describe())
            self.assertEqual(len(self.worker_envs()), 2, "the spare started a worker")


if __name__ == "__main__":
    harness.main()
