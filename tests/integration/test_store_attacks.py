"""Attacks on the store a job's agent hosts, each against a running job, which must not
notice (an outside audit reproduced them against gangrun before these fixes):

- a storm of connections: 2048 waiting connections from each of 127.0.0.2-8, 2048 more
  from 127.0.0.1 (the agents' own address), then 200 from 127.0.0.9, past the store's
  16384-connection limit during a 2-node job. Before, the reclaim closed the connections
  heard from least recently, among them the head agent's long wait, and both nodes exited
  3 ("lost the node"); now the newest connection of the most crowded address gives way;
- a client filling the store until it is refused, during a 2-node job: before, the
  agents' own writes were refused next and their links closed (exit 3); now the filler is
  closed and the agents' run-wide keys use a reserve;
- idle sockets from 127.0.0.1 up to --max-connections-per-address on a one-node job whose
  workers open new store clients: before, every new client was refused ("Connection reset
  by peer"); now only silent sockets count, and the one silent the longest gives way to a
  newcomer while the address holds the cap.

Every connection is made from an address of 127.0.0.0/8 (all loopback on Linux), bound
before connecting; every wait is for an event and bounded by harness.EVENT_TIMEOUT. The
test raises its own open-file limit (the store raises its own) and skips, saying why,
where the hard limit is too low.
"""

import os
import resource
import socket
import time

import harness
import store_wire
from harness import EVENT_TIMEOUT
from store_wire import VALIDATE_BYTES, VALIDATED, blob, u32, u64
from test_multinode import LOOPBACK, MultiNodeCase

STORM_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 9)]
PER_ADDRESS = 2048  # the store's default --max-connections-per-address
MAX_CONNECTIONS = 16384  # the store's default --max-connections
LATE_ADDRESS = "127.0.0.9"
LATE = 200

# A 2.x client's handshake and a WAIT nothing will answer: a connection that holds its
# place the way a blocked rank's does.
WAIT_FOREVER = VALIDATE_BYTES + bytes([VALIDATED["WAIT"]]) + u64(1) + blob("/never/written")


def raise_open_files(case, wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        case.skipTest(f"the open-file hard limit is {hard}; this test needs {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    case.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))


def connect_from(source, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.settimeout(EVENT_TIMEOUT)
        sock.bind((source, 0))
        sock.connect((LOOPBACK, port))
    except BaseException:
        sock.close()
        raise
    return sock


def open_storm(source, port, count, into, payload=WAIT_FOREVER):
    """COUNT connections from SOURCE, each sending PAYLOAD (not waiting for anything),
    appended to INTO as they are made so that the caller closes them whatever happens."""
    for _ in range(count):
        sock = connect_from(source, port)
        into.append(sock)
        if payload:
            sock.sendall(payload)


def served_from(source, port, nonce, into):
    """A connection from SOURCE that did the handshake and got its PING answered: the store
    admitted and served it."""
    sock = connect_from(source, port)
    into.append(sock)
    sock.sendall(VALIDATE_BYTES + bytes([VALIDATED["PING"]]) + u32(nonce))
    answer = b""
    while len(answer) < 4:
        chunk = sock.recv(4 - len(answer))
        if not chunk:
            raise AssertionError(f"the store closed the connection from {source} before answering")
        answer += chunk
    assert answer == u32(nonce), f"PING {nonce} answered {answer!r}"


def is_closed(sock):
    """True once the server closed SOCK (looked at without waiting)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(EVENT_TIMEOUT)


def close_all(socks):
    for sock in socks:
        sock.close()


class StoreAttacks(MultiNodeCase):
    def waiting_worker(self):
        """A fake worker that says it runs, then waits for the test's go file."""
        return self.fake("--touch", self.path("ready.{rank}"), "--wait-file", self.path("go"),
                         4 * EVENT_TIMEOUT)

    def let_finish(self):
        with open(self.path("go"), "w"):
            pass

    def assert_both_nodes_succeed(self, agents):
        results = self.finish_all(agents)
        self.assert_all_exit(results, 0)
        for node, result in results.items():
            self.assertNotIn("lost node", result.stderr, f"node {node}" + result.describe())
        return results

    def test_a_storm_of_connections_leaves_a_two_node_job_alone(self):
        storm_count = (len(STORM_ADDRESSES) + 1) * PER_ADDRESS
        raise_open_files(self, storm_count + LATE + 1000)
        port, agents = self.start_static([1, 1], self.waiting_worker())
        self.wait_ready(2)  # both agents joined; their connections are open
        storm, late = [], []
        started = time.monotonic()
        try:
            for source in STORM_ADDRESSES:
                open_storm(source, port, PER_ADDRESS, storm)
            open_storm(LOOPBACK, port, PER_ADDRESS, storm)
            try:
                for i in range(LATE):
                    served_from(LATE_ADDRESS, port, i, late)
            except (OSError, AssertionError) as error:
                time.sleep(0.5)  # only to let a dying agent's last lines reach its log
                self.fail(f"late connection {len(late)} failed ({error}); the agents' exit codes: "
                          f"{ {node: p.poll() for node, p in agents.items()} }; node 0 said:\n"
                          + self.stderr_of(agents[0])[-2000:])
            # Each late one was admitted after a connection gave way; the kernel has the FIN
            # of each by now.
            harness.wait_for(lambda: sum(map(is_closed, storm)) >= LATE, EVENT_TIMEOUT,
                             f"{LATE} storm connections to give way")
            self.assertFalse(any(map(is_closed, late)), "a late connection was closed")
            self.assertTrue(all(p.poll() is None for p in agents.values()),
                            "an agent ended during the storm")
            reclaimed = sum(map(is_closed, storm))
            print(f"storm: {len(storm) + len(late)} connections opened, {reclaimed} reclaimed, "
                  f"in {time.monotonic() - started:.1f} s")
        finally:
            close_all(storm + late)
        self.let_finish()
        results = self.assert_both_nodes_succeed(agents)
        self.assertIn(f"connections are open (limit {MAX_CONNECTIONS}", results[0].stderr)

    def test_a_client_filling_the_store_is_closed_and_the_job_goes_on(self):
        store_bytes = 16 * 1024 * 1024
        value = b"x" * (1024 * 1024)
        port, agents = self.start_static([1, 1], self.waiting_worker(),
                                         extra=lambda node: ("--max-store-bytes", store_bytes))
        self.wait_ready(2)
        stored = 0
        with store_wire.Wire.__new__(store_wire.Validated) as filler:
            filler.sock = connect_from("127.0.0.2", port)
            filler.timeout = EVENT_TIMEOUT
            filler.send(VALIDATE_BYTES)
            try:
                for i in range(2 * store_bytes // len(value)):
                    filler.set(f"/fill/{i}", value)
                    self.assertEqual(filler.ping(i), i)
                    stored += len(value)
            except (ConnectionError, OSError):
                pass
            self.assertLess(stored, 2 * store_bytes, "the filler was never refused")
            self.assertTrue(filler.closed_within(EVENT_TIMEOUT), "the filler was not closed")
        print(f"fill: {stored} bytes stored before the filler was closed")
        self.assertGreater(stored, store_bytes // 2)
        self.let_finish()
        results = self.assert_both_nodes_succeed(agents)
        self.assertIn("the store is full", results[0].stderr)
        self.assertIn("--max-store-bytes", results[0].stderr)

    def test_idle_sockets_from_the_workers_address_do_not_lock_them_out(self):
        raise_open_files(self, PER_ADDRESS + 500)
        port = harness.free_port()
        clients_per_worker = 3
        worker = [harness.TEST_PYTHON, "-B", os.path.join(harness.HERE, "store_client_worker.py"),
                  self.path("ready.{rank}"), self.path("go"), self.path("connected.{rank}"),
                  self.path("end"), clients_per_worker]
        agent = self.start(["--nproc_per_node", 2, "--master_port", port, *worker],
                           env=harness.clean_env())
        self.wait_ready(2)  # the store listens, and no worker has connected yet
        idle = []
        try:
            base = store_wire.open_sockets(agent.pid)
            open_storm(LOOPBACK, port, PER_ADDRESS, idle, payload=b"")
            harness.wait_for(lambda: store_wire.open_sockets(agent.pid) >= base + PER_ADDRESS, EVENT_TIMEOUT,
                             f"the store to hold {PER_ADDRESS} idle connections")
            self.let_finish()
            harness.wait_for(lambda: all(os.path.exists(self.path(f"connected.{rank}"))
                                         for rank in range(2)) or agent.poll() is not None,
                             EVENT_TIMEOUT, "both workers to have their new clients served")
            self.assertIsNone(agent.poll(), "the job ended: " + self.stderr_of(agent)[-3000:])
            # Each newcomer took the place of the socket silent the longest while the
            # address held the cap; once it spoke, it no longer counted. The two workers'
            # first clients may both arrive before either speaks.
            closed = [i for i, sock in enumerate(idle) if is_closed(sock)]
            self.assertIn(len(closed), (1, 2), f"idle sockets closed: {closed}")
            self.assertEqual(closed, list(range(len(closed))),
                             "an idle socket other than the ones silent the longest was closed")
            with open(self.path("end"), "w"):
                pass
            result = self.finish(agent, timeout=EVENT_TIMEOUT)
            self.assertExit(result, 0)
        finally:
            close_all(idle)
            with open(self.path("end"), "a"):
                pass
        self.assertIn("silent connections are open from 127.0.0.1", result.stderr)


if __name__ == "__main__":
    harness.main()
