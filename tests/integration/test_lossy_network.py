"""A lossy, slow network changes nothing a healthy one would not: 1% of the packets
between simulated nodes (netns_nodes.Nodes) are lost in each direction, and, where the
kernel has netem, every node delays what it sends by 0.5 ms (1 ms there and back).
TCP retransmits what is lost; gangrun's control plane must not mistake that for a lost
node or store.

A static 3-node job starts with the right ranks and ends 0; one failing worker ends the
job on every node with its exit code, the other workers terminated; a c10d job with a
restart left forms round 1 after a worker failure and succeeds. A dedicated case shows the
nodes really drop packets, so that the others ran on a lossy network.

Skipped, with the reason, where network namespaces, tc or nft cannot be used.
"""

import re
import shutil
import subprocess
import sys

import harness
import netns_nodes
import static_nodes
# The module, not its classes: unittest would run every case the names bring in.
import test_multinode_netns as netns_cases
from harness import EVENT_TIMEOUT

LOSS_PERCENT = 1
DELAY = "0.5ms"  # each way: 1 ms there and back
# In the hub's bridge: a packet is lost between the nodes, as on a wire, in either
# direction, and its sender learns of it only as TCP does, by the missing acknowledgment.
LOSS_RULES = f"""table bridge lossy {{
  chain forward {{
    type filter hook forward priority 0; policy accept;
    numgen random mod 100 < {LOSS_PERCENT} counter drop
  }}
}}
"""
FAILED_WORKER_EXIT = 3
# A job here takes about a second; a network that loses too much ends the case in this
# bound, the agents killed, rather than in ctest's.
JOB_TIMEOUT = EVENT_TIMEOUT
# Enough datagrams that at 1% loss at least one is dropped but for a chance of 0.99 ** 5000.
DATAGRAMS = 5000


class LossyNodes(netns_nodes.Nodes):
    """Nodes between which LOSS_PERCENT of the packets are lost (an nftables rule in the
    hub's bridge, whose counter says how many), and whose every node delays what it sends
    by DELAY where the kernel has netem (many cloud kernels lack it: then the loss alone)."""

    def __init__(self, test, count):
        super().__init__(test, count)
        self._run(self.hub(), ["nft", "-f", "-"], input=LOSS_RULES)
        for node in range(1, count + 1):
            self._delay(node)

    def hub(self):
        """The namespace of the bridge every cable ends at (scripts/netns-nodes)."""
        return f"{self.prefix}hub"

    def _delay(self, node):
        done = subprocess.run(["tc", "-n", self.namespace(node), "qdisc", "add", "dev", self.ifname(node), "root",
                               "netem", "delay", DELAY], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=EVENT_TIMEOUT)
        if done.returncode != 0 and "qdisc kind is unknown" not in done.stdout:
            self.test.fail(f"tc netem on node {node} failed ({done.returncode}): {done.stdout}")

    def _run(self, namespace, argv, input=None):
        done = subprocess.run(["ip", "netns", "exec", namespace, *argv], input=input,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=EVENT_TIMEOUT)
        if done.returncode != 0:
            self.test.fail(f"{' '.join(argv)} in {namespace} failed ({done.returncode}): {done.stdout}")
        return done.stdout

    def dropped(self):
        """The packets lost between the nodes so far."""
        out = self._run(self.hub(), ["nft", "list", "chain", "bridge", "lossy", "forward"])
        match = re.search(r"counter packets (\d+)", out)
        if match is None:
            self.test.fail(f"no drop counter in: {out}")
        return int(match.group(1))


class LossyNetwork(netns_cases.NetnsCase):
    def setUp(self):
        for tool, package in (("tc", "iproute2"), ("nft", "nftables")):
            if shutil.which(tool) is None:
                self.skipTest(f"a lossy network needs '{tool}' (Debian: {package})")
        super().setUp()

    def assert_exit_everywhere(self, results, code, nodes):
        for node_rank, result in results.items():
            self.assertEqual(result.returncode, code, f"agent of node rank {node_rank} "
                             f"({nodes.dropped()} packets dropped)" + result.describe())
            # A retransmission is no lost peer.
            self.assertNotIn("lost ", result.stderr, f"agent of node rank {node_rank}" + result.describe())

    def test_the_nodes_drop_packets(self):
        with LossyNodes(self, 2) as nodes:
            # Datagrams need no listener: each crosses the hub to node 1 or is lost there.
            send = ("import socket, sys\n"
                    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                    "for _ in range(int(sys.argv[2])): s.sendto(b'x', (sys.argv[1], 9))\n")
            result = nodes.run(2, [sys.executable, "-c", send, nodes.address(1), DATAGRAMS],
                               timeout=EVENT_TIMEOUT)
            self.assertEqual(result.returncode, 0, result.describe())
            self.assertGreater(nodes.dropped(), 0, f"none of {DATAGRAMS} datagrams was lost")

    def test_a_static_job_starts_with_the_right_ranks_and_ends_0(self):
        with LossyNodes(self, 3) as nodes:
            job = static_nodes.StaticJob(self, 3, nodes=nodes, master_port=netns_cases.PORT, env=harness.clean_env())
            job.start_all(lambda node_rank: ["--nproc_per_node", 2, *self.env_worker()])
            results = job.finish(timeout=JOB_TIMEOUT)
            self.assert_exit_everywhere(results, 0, nodes)
            got = sorted((int(env["RANK"]), env["WORLD_SIZE"], env["GROUP_RANK"]) for env in self.worker_envs())
            self.assertEqual(got, [(rank, "6", str(rank // 2)) for rank in range(6)])

    def test_one_failing_worker_ends_the_job_on_every_node_with_its_code(self):
        with LossyNodes(self, 3) as nodes:
            job = static_nodes.StaticJob(self, 3, nodes=nodes, master_port=netns_cases.PORT, env=harness.clean_env())
            go = self.path("go")  # rank 4 fails once every worker runs
            worker = self.fake("--touch", self.ready_file(), "--only-rank", 4, "--wait-file", go,
                               EVENT_TIMEOUT, "--only-rank", 4, "--exit", FAILED_WORKER_EXIT,
                               "--sleep", netns_cases.SLEEP_FOREVER)
            job.start_all(lambda node_rank: ["--nproc_per_node", 2, *worker])
            self.wait_ready(6)
            with open(go, "w"):
                pass
            results = job.finish(timeout=JOB_TIMEOUT)
            self.assert_exit_everywhere(results, FAILED_WORKER_EXIT, nodes)
            pids = self.pid_files()
            self.assertEqual(sorted(pids), list(range(6)), "workers that started (no restarts)")
            self.assert_dead(pids.values(), what="every worker after rank 4 failed")
            self.assertEqual(len(self.recorded_pids()), 6, "a worker was restarted")

    def test_a_c10d_job_forms_round_1_after_a_worker_failure_and_succeeds(self):
        # Rank 2 fails in round 0 once every rank of it wrote its environment, while the others
        # wait to be stopped; round 1 succeeds.
        go = self.path("go")
        worker = self.env_worker("--if-restart-below", 1, "--touch", self.ready_file(),
                                 "--only-rank", 2, "--if-restart-below", 1, "--wait-file", go, EVENT_TIMEOUT,
                                 "--only-rank", 2, "--if-restart-below", 1, "--exit", FAILED_WORKER_EXIT,
                                 "--if-restart-below", 1, "--sleep", netns_cases.SLEEP_FOREVER)
        restarts = ["--max_restarts", 1]
        with LossyNodes(self, 3) as nodes:
            agents = {0: self.c10d_host(nodes, 3, worker, extra=restarts)}
            for node in (2, 3):
                agents[node - 1] = self.c10d_agent(nodes, node, 3, worker, extra=restarts)
            self.wait_ready(3)
            with open(go, "w"):
                pass
            results = static_nodes.finish(self, agents, timeout=JOB_TIMEOUT)
            self.assert_exit_everywhere(results, 0, nodes)
            self.assertIn("rendezvous: round 1 (restart count 1): 3 nodes, world size 3", results[0].stderr,
                          results[0].describe())
            rounds = sorted((env["TORCHELASTIC_RESTART_COUNT"], env["RANK"]) for env in self.worker_envs())
            self.assertEqual(rounds, [(str(restart), str(rank)) for restart in range(2) for rank in range(3)])


if __name__ == "__main__":
    harness.main()
