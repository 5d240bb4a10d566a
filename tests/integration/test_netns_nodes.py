"""The simulated nodes of the multi-node tests (netns_nodes.py, scripts/netns-nodes): nodes
reach each other by address and name, a cut cable really cuts, the root namespace holds a
blackhole route for the subnet while the nodes exist, and nothing is left after them.

Every client runs in a node; the root namespace never dials a node's address.
"""

import os
import subprocess
import sys
import textwrap

import harness
import netns_nodes
from harness import EVENT_TIMEOUT

PYTHON = sys.executable

# Listens on ADDRESS:PORT in a node, answers every line "pong <line>", and creates READY
# once it listens. It ends when the nodes are removed.
SERVER = textwrap.dedent("""
    import socket, sys
    address, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    listener = socket.create_server((address, port))
    open(ready, "w").close()
    while True:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(10)
            connection.sendall(b"pong " + connection.recv(100))
""")

# Connects to ADDRESS:PORT with a 2 s timeout for the connection and the answer, sends
# "ping", prints the answer; exits 3 when it cannot connect, saying why.
CLIENT = textwrap.dedent("""
    import socket, sys
    try:
        with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2) as connection:
            connection.sendall(b"ping")
            print(connection.recv(100).decode())
    except OSError as error:
        print(f"cannot connect: {error!r}")
        sys.exit(3)
""")

CANNOT_CONNECT = 3
PORT = 29500  # any port: each node has its own


def blackhole_routes():
    done = subprocess.run(["ip", "route", "show", "type", "blackhole"], stdout=subprocess.PIPE, text=True,
                          timeout=30, check=True)
    return [line.split()[1] for line in done.stdout.splitlines() if line.split()[:1] == ["blackhole"]]


def namespaces_of(prefix):
    done = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True, timeout=30, check=True)
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    return sorted(name for name in names if name.startswith(prefix))


class NetnsNodes(harness.GangrunTestCase):
    def setUp(self):
        reason = netns_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def start_server(self, nodes, node):
        ready = self.path(f"server{node}.ready")
        nodes.popen(node, [PYTHON, "-c", SERVER, nodes.address(node), PORT, ready])
        harness.wait_for(lambda: os.path.exists(ready), EVENT_TIMEOUT, f"the server on node {node} to listen")

    def connect(self, nodes, client, server):
        return nodes.run(client, [PYTHON, "-c", CLIENT, nodes.address(server), PORT], timeout=EVENT_TIMEOUT)

    def assert_connects(self, nodes, client, server):
        result = self.connect(nodes, client, server)
        self.assertEqual((result.returncode, result.stdout.strip()), (0, "pong ping"),
                         f"node {client} could not talk to node {server}" + result.describe())

    def test_a_client_on_node2_gets_an_answer_from_a_server_on_node1(self):
        with netns_nodes.Nodes(self, 2) as nodes:
            self.start_server(nodes, 1)
            self.assert_connects(nodes, 2, 1)

    def test_a_node_knows_its_name_and_the_names_of_the_others(self):
        with netns_nodes.Nodes(self, 2) as nodes:
            result = nodes.run(2, ["hostname"], timeout=EVENT_TIMEOUT)
            self.assertEqual((result.returncode, result.stdout.strip()), (0, "node2"), result.describe())

            result = nodes.run(2, ["getent", "hosts", "node1"], timeout=EVENT_TIMEOUT)
            self.assertEqual(result.returncode, 0, result.describe())
            self.assertEqual(result.stdout.split(), [nodes.address(1), "node1"], result.describe())

            # What gloo and c10d do to find the node's own address.
            own = "import socket; print(socket.gethostbyname(socket.gethostname()), socket.getfqdn())"
            result = nodes.run(2, [PYTHON, "-c", own], timeout=EVENT_TIMEOUT)
            self.assertEqual(result.stdout.split(), [nodes.address(2), "node2"], result.describe())

    def test_a_command_on_a_node_keeps_the_environment_and_working_directory(self):
        with netns_nodes.Nodes(self, 1) as nodes:
            env = harness.clean_env(NETNS_NODES_MARK="kept")
            result = nodes.run(1, ["sh", "-c", 'pwd; echo "$NETNS_NODES_MARK"'], timeout=EVENT_TIMEOUT,
                               cwd=self.tmp, env=env)
            self.assertEqual(result.stdout.splitlines(), [os.path.realpath(self.tmp), "kept"], result.describe())

    def test_a_cut_cable_stops_the_traffic_and_a_mended_one_carries_it_again(self):
        with netns_nodes.Nodes(self, 2) as nodes:
            self.start_server(nodes, 1)
            self.assert_connects(nodes, 2, 1)

            nodes.cut(2)
            result = self.connect(nodes, 2, 1)
            self.assertEqual(result.returncode, CANNOT_CONNECT, "node 2 still reaches node 1 after its cable was cut"
                             + result.describe())

            nodes.mend(2)
            # The first packets after the mend may still meet the failed ARP entry; the cable
            # must carry traffic again soon, not on the first try.
            last = []

            def answered():
                last[:] = [self.connect(nodes, 2, 1)]
                return last[0].returncode == 0 and last[0].stdout.strip() == "pong ping"
            try:
                harness.wait_for(answered, EVENT_TIMEOUT, "node 2 to reach node 1 after the mend", interval=0.2)
            except AssertionError as error:
                self.fail(str(error) + last[0].describe())

    def test_the_root_namespace_blackholes_the_subnet_while_the_nodes_exist_and_nothing_is_left(self):
        nodes = netns_nodes.Nodes(self, 2)
        subnet = f"{nodes.subnet}.0/24"
        self.assertIn(subnet, blackhole_routes())
        self.assertEqual(namespaces_of(nodes.prefix), sorted(nodes.prefix + n for n in ("1", "2", "hub")))

        # up again (idempotent): same nodes, same route
        self.assertEqual(nodes.script("up", "2").returncode, 0)
        self.assertIn(subnet, blackhole_routes())
        self.assertEqual(namespaces_of(nodes.prefix), sorted(nodes.prefix + n for n in ("1", "2", "hub")))

        # One process in the group close() kills, one that left it: only down ends that one.
        grouped = nodes.popen(1, ["sleep", "600"])
        escaped_pid_file = self.path("escaped.pid")
        nodes.run(2, ["sh", "-c", f'setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > "{escaped_pid_file}"'],
                  timeout=EVENT_TIMEOUT)
        with open(escaped_pid_file) as f:
            escaped = int(f.read())
        self.assertFalse(harness.is_dead(escaped), harness.proc_describe(escaped))

        nodes.close()
        self.assertIsNotNone(grouped.poll(), "the process close() started is still running")
        self.assert_dead([escaped], what="the process that left its process group")
        self.assertNotIn(subnet, blackhole_routes())
        self.assertEqual(namespaces_of(nodes.prefix), [])
        self.assertEqual([name for name in os.listdir("/run") if nodes.prefix in name], [])

        # down again (idempotent)
        result = nodes.script("down")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertNotIn(subnet, blackhole_routes())


if __name__ == "__main__":
    harness.main()
