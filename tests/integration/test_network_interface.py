"""The interface each node's workers talk through (docs/networking.md): simulated nodes
(netns_nodes.py) whose interface toward the others has a different name on each node (eno1
on node 1, eth0 on node 2), each with a decoy interface listed first that leads nowhere
(decoy0, a bridge with no ports, as docker0 without containers), and each node's own host
name resolving to 127.0.1.1 inside it, as on Debian. Nobody sets GLOO_SOCKET_IFNAME or its
kin.

gangrun: a real gloo DDP job (multinode_ddp_worker.py, GANGRUN_TEST_PYTHON's torch)
succeeds, and each node's workers were given their own interface's name, which the agent
logs with the address that decided it. A user's own NCCL_SOCKET_IFNAME stays.

torchrun (PEER_PYTHON's torch 2.x), the same job in the same nodes, for comparison: what
users get today. Gloo
takes the address the host name resolves to (127.0.1.1), which the other node cannot
reach, so the process group cannot form ("Gloo connectFullMesh failed ... Connection
refused, remote=[127.0.1.1]:PORT"); the workers' group timeout is shortened so that the
failure comes in seconds. The test records what happened (it prints the outcome), and
passes either way only if the outcome is one of the two it knows: that failure, or, should
this torch find the right address by itself, a success.

IPv6 (no simulated nodes: the netns nodes have IPv4 addresses only): two agents on ::1,
through a bracketed --rdzv_endpoint or a bare --master_addr.
"""

import json
import os
import re
import socket
import subprocess
import sys

import harness
import netns_nodes
import static_nodes
from harness import EVENT_TIMEOUT, GANGRUN, TEST_PYTHON, GangrunTestCase

SCRIPT = os.path.join(harness.HERE, "multinode_ddp_worker.py")
PORT = 29500  # each node has its own network stack
IFNAMES = ["eno1", "eth0"]
JOB_TIMEOUT = 3 * EVENT_TIMEOUT
# torchrun's gloo group cannot form here; its workers give up after this many seconds.
SHORT_GROUP_TIMEOUT_S = 10


class NetworkInterface(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        reason = netns_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()
        self.out = self.path("out")
        os.mkdir(self.out)

    def nodes(self):
        return netns_nodes.Nodes(self, 2, ifnames=IFNAMES, decoy=True, loopback_hostname=True)

    def static_job(self, nodes, env, args, master_addr=None, program=GANGRUN, timeout=JOB_TIMEOUT, hung_ok=False):
        """Starts PROGRAM on both nodes, all at once, as the nodes of a static job of one
        worker each, node 1 hosting its store (at MASTER_ADDR, node 1's address by default)
        with ARGS after the job's options; returns [(node, exit code or None when HUNG_OK and
        it had not ended within TIMEOUT and was killed, stdout and stderr)]."""
        job = static_nodes.StaticJob(self, 2, nodes=nodes, master_addr=master_addr, master_port=PORT, env=env,
                                     program=program)
        job.start_all(lambda node_rank: ["--nproc_per_node", 1, *args])
        results = job.finish(timeout=timeout, hung_ok=hung_ok)
        return [(node_rank + 1, result.returncode, result.stdout + result.stderr)
                for node_rank, result in results.items()]

    def results(self):
        return {int(name.split(".")[1]): self.read_json(os.path.join(self.out, name))
                for name in os.listdir(self.out) if name.startswith("result.")}

    def env(self, **extra):
        return harness.clean_env(TMPDIR=self.tmp, GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, **extra)

    def gangrun_job(self, nodes, env, master_addr=None):
        return self.static_job(nodes, env, ["--python", TEST_PYTHON, SCRIPT, self.out, self.pid_dir],
                               master_addr=master_addr)

    def check_setup(self, nodes):
        """The nodes are as the test says: decoy0 first, the real interface named per node,
        the host name on 127.0.1.1."""
        for node in (1, 2):
            done = subprocess.run(nodes.argv(node, [TEST_PYTHON, "-c", (
                "import socket; print(socket.gethostbyname(socket.gethostname())); "
                "print(' '.join(name for _, name in socket.if_nameindex()))")]), stdout=subprocess.PIPE,
                text=True, timeout=EVENT_TIMEOUT, env=self.env())
            address, names = done.stdout.split("\n")[:2]
            self.assertEqual(address, "127.0.1.1")
            self.assertEqual(names.split(), ["lo", "decoy0", nodes.ifname(node)])

    def test_gangrun_gives_each_node_its_own_interface(self):
        with self.nodes() as nodes:
            self.check_setup(nodes)
            ended = self.gangrun_job(nodes, self.env())
            where = "".join(f"\n--- node {node} ---\n{output[-3000:]}" for node, _, output in ended)
            for node, code, output in ended:
                self.assertEqual(code, 0, f"gangrun on node {node}" + where)
                self.assertIn(
                    f"network: GLOO_SOCKET_IFNAME={nodes.ifname(node)} NCCL_SOCKET_IFNAME=={nodes.ifname(node)} "
                    f"TP_SOCKET_IFNAME={nodes.ifname(node)} ({nodes.ifname(node)} holds {nodes.address(node)}, "
                    f"this node's address toward the store at {nodes.address(1)}:{PORT})", output)
            results = self.results()
            self.assertEqual(sorted(results), [0, 1], where)
            for rank, result in results.items():
                ifname = IFNAMES[rank]
                self.assertEqual(result["host"], f"node{rank + 1}")
                self.assertEqual(result["all_reduce"], 1.0)
                self.assertEqual(result["interface_variables"], {
                    "GLOO_SOCKET_IFNAME": ifname, "NCCL_SOCKET_IFNAME": "=" + ifname, "TP_SOCKET_IFNAME": ifname})

    def test_the_store_host_named_by_its_loopback_host_name(self):
        # --master_addr node1: on node1 that name is 127.0.1.1, so its agent reaches its own
        # store through loopback; the address node2 reached the store at decides there.
        with self.nodes() as nodes:
            ended = self.gangrun_job(nodes, self.env(), master_addr="node1")
            where = "".join(f"\n--- node {node} ---\n{output[-3000:]}" for node, _, output in ended)
            for node, code, _ in ended:
                self.assertEqual(code, 0, f"gangrun on node {node}" + where)
            self.assertIn(f"(eno1 holds {nodes.address(1)}, the address the other nodes reached this node's "
                          "store at)", ended[0][2])
            self.assertIn(f"(eth0 holds {nodes.address(2)}, this node's address toward the store at "
                          f"{nodes.address(1)}:{PORT})", ended[1][2])
            results = self.results()
            self.assertEqual(sorted(results), [0, 1], where)
            # Each node's workers get the store's address as a number, the one their agent
            # reached it at: the loopback address node1 has for itself, node2 the network's.
            for rank, result in results.items():
                self.assertEqual(result["master_addr"], ["127.0.1.1", nodes.address(1)][rank])
                self.assertEqual(result["all_reduce"], 1.0)
                self.assertEqual(result["interface_variables"]["GLOO_SOCKET_IFNAME"], IFNAMES[rank])

    def test_the_users_own_setting_stays(self):
        with self.nodes() as nodes:
            ended = self.gangrun_job(nodes, self.env(NCCL_SOCKET_IFNAME="ib0"))
            where = "".join(f"\n--- node {node} ---\n{output[-3000:]}" for node, _, output in ended)
            for node, code, output in ended:
                self.assertEqual(code, 0, f"gangrun on node {node}" + where)
                self.assertIn("; NCCL_SOCKET_IFNAME left as set by the user (ib0)", output)
            for rank, result in self.results().items():
                self.assertEqual(result["interface_variables"], {
                    "GLOO_SOCKET_IFNAME": IFNAMES[rank], "NCCL_SOCKET_IFNAME": "ib0",
                    "TP_SOCKET_IFNAME": IFNAMES[rank]})

    def test_torchrun_in_the_same_nodes(self):
        # Debian's torch 1.13 torchrun does not start under Python 3.11 (its redirects
        # default is None), so the comparison is PEER_PYTHON's torch 2.x torchrun, whose
        # workers run on that interpreter.
        torchrun = harness.peer_tool("torchrun")
        with self.nodes() as nodes:
            env = self.env(DDP_WORKER_GROUP_TIMEOUT_S=str(SHORT_GROUP_TIMEOUT_S))
            ended = self.static_job(nodes, env, [SCRIPT, self.out, self.pid_dir], program=torchrun,
                                    timeout=SHORT_GROUP_TIMEOUT_S + 2 * EVENT_TIMEOUT, hung_ok=True)
        where = "".join(f"\n--- node {node} ---\n{output[-3000:]}" for node, _, output in ended)
        codes = [code for _, code, _ in ended]
        if codes == [0, 0] and len(self.results()) == 2:
            print("torchrun in the same nodes: SUCCEEDED (this torch found a usable address itself)",
                  file=sys.stderr)
            return
        self.assertEqual(self.results(), {}, "no rank got through the process group" + where)
        self.assertTrue(all(code != 0 for code in codes), where)
        # Gloo advertised the host name's loopback address and could not form its mesh:
        # "Gloo connectFullMesh failed with ... Connection refused, remote=[127.0.1.1]:PORT"
        # on one node, "... Connect timeout" on the other (torch 2.x, seen here).
        everything = "".join(output for _, _, output in ended)
        failures = re.findall(r"^.*Gloo connectFullMesh failed.*$", everything, re.MULTILINE)
        self.assertTrue(failures, "expected gloo's mesh to fail" + where)
        loopback = [line for line in failures if "127.0.1.1" in line]
        print(f"torchrun in the same nodes: FAILED, exit codes {codes} (gangrun's job succeeds here): "
              f"{(loopback or failures)[0].strip()[:300]}", file=sys.stderr)


def ipv6_loopback_port():
    """A test port (harness.free_port), or None where this host has no IPv6 loopback."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return None
    return harness.free_port()


class Ipv6Loopback(GangrunTestCase):
    """Two agents on this machine meeting at an IPv6 store (fake workers): the endpoint in
    brackets, or a bare --master_addr; the workers get the bare address as MASTER_ADDR (the
    form torch's TCPStore takes), and no interface variable, since the store is reached
    through loopback."""

    def setUp(self):
        super().setUp()
        self.port = ipv6_loopback_port()
        if self.port is None:
            self.skipTest("no IPv6 loopback (::1) here")

    def run_pair(self, start):
        """START(node, ARGS) starts the agent of node 0 or 1 with ARGS: one worker that notes
        its environment."""
        worker = ["--nproc_per_node", 1, *self.fake("--print-env", self.path("env.{rank}.json"))]
        agents = {node: start(node, worker) for node in (0, 1)}
        results = list(static_nodes.finish(self, agents).values())
        for result in results:
            self.assertEqual(result.returncode, 0, result.describe())
            self.assertIn("network: this node reaches the store through loopback (lo holds ::1)", result.stderr)
        for rank in (0, 1):
            env_seen = self.read_json(self.path(f"env.{rank}.json"))["env"]
            self.assertEqual(env_seen["MASTER_ADDR"], "::1")
            self.assertEqual(env_seen["MASTER_PORT"], str(self.port))
            for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
                self.assertNotIn(name, env_seen)
        return results

    def test_c10d_endpoint_in_brackets(self):
        env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET)
        results = self.run_pair(lambda node, args: self.start(
            ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"[::1]:{self.port}", "--rdzv_id", "v6", "--nnodes", 2,
             *args], env=env))
        self.assertTrue(any(f"hosting the store at [::1]:{self.port}" in r.stderr for r in results))

    def test_static_bare_master_addr(self):
        self.run_pair(static_nodes.StaticJob(self, 2, master_addr="::1", master_port=self.port).start)

    def test_messages_write_the_address_in_brackets(self):
        # The dry run, and the warning of a job without a secret, as an endpoint is written.
        where = f"[::1]:{self.port}"
        args = [*static_nodes.StaticJob(self, 2, master_addr="::1", master_port=self.port).args(0),
                "--nproc_per_node", 1]
        dry = self.gangrun(["--dry-run", *args, *self.fake()])
        self.assertExit(dry, 0)
        self.assertIn(f"store:      {where} (hosted by node 0: this node)", dry.stdout)
        self.assertIn(f"toward the store at {where}", dry.stdout)
        result = self.gangrun(["--rdzv_conf", "join_timeout=1", *args, *self.fake()])
        self.assertIn(f"anyone who can reach {where} can join", result.stderr, result.describe())


if __name__ == "__main__":
    harness.main()
