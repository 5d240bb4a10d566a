"""The store's connection table cannot be taken over (security audit: eviction by idle
connections). Against `gangrun store serve` with a small --max-connections: pending WAITs
and silent connections opened from several loopback addresses give way to a fresh client
instead of locking it out (the newest of the most crowded address first), and no address
holds more than --max-connections-per-address silent connections (its oldest silent one
gives way to a newcomer; clients that spoke do not count).

Every connection is made from an address of 127.0.0.0/8 (all loopback on Linux), bound
before connecting; every wait is bounded by harness.EVENT_TIMEOUT."""

import contextlib
import socket

import harness
import store_wire
from harness import GangrunTestCase
from store_wire import VALIDATE_BYTES, VALIDATED, Legacy, Validated, blob, u32, u64

MAX_CONNECTIONS = 40
PER_ADDRESS = 12
ATTACKERS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]


def connect_from(source, port, kind=store_wire.Wire):
    """A connection from loopback address SOURCE: a silent store_wire.Wire, or a Validated
    one that has done its handshake (VALIDATE + PING)."""
    conn = kind.__new__(kind)
    conn.sock = socket.create_connection(("127.0.0.1", port), timeout=harness.EVENT_TIMEOUT,
                                         source_address=(source, 0))
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.timeout = harness.EVENT_TIMEOUT
    if kind is Validated:
        with closed_on_failure(conn):
            conn.send(VALIDATE_BYTES + bytes([VALIDATED["PING"]]) + u32(4242))
            assert conn.u32() == 4242, "PING was not echoed"
    return conn


def waiting_from(source, port, nonce):
    """A connection from SOURCE with a WAIT pending that nothing will answer."""
    conn = connect_from(source, port, Validated)
    with closed_on_failure(conn):
        conn.op("WAIT", u64(1) + blob("/never"))
        assert conn.ping(nonce) == nonce  # answered once the WAIT is registered
    return conn


@contextlib.contextmanager
def closed_on_failure(conn):
    try:
        yield
    except BaseException:
        conn.close()
        raise


def is_open(conn):
    """True while the server has not closed CONN (looked at without waiting)."""
    conn.sock.setblocking(False)  # with a timeout set, Python would wait for a byte first
    try:
        return conn.sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        conn.sock.settimeout(conn.timeout)


def fresh_client(port):
    """A fresh client from 127.0.0.1, served: it got correct answers (else the test fails)."""
    c = Legacy(port, timeout=harness.EVENT_TIMEOUT)
    c.set("/fresh", b"ok")
    assert c.get("/fresh") == b"ok", "the fresh client got a wrong answer"
    return c


def served(port):
    """A fresh client from 127.0.0.1 gets correct answers now."""
    with fresh_client(port):
        return True


class Eviction(GangrunTestCase):
    def serve(self, *extra):
        return store_wire.ServedStore(self, "--max-connections", MAX_CONNECTIONS,
                                      "--max-connections-per-address", PER_ADDRESS, *extra)

    def test_pending_waits_from_many_addresses_cannot_lock_a_client_out(self):
        """The table full of WAITs (10 from each of 4 addresses): before, every newcomer
        was refused; now the newcomer takes a waiting connection's place."""
        per_attacker = MAX_CONNECTIONS // len(ATTACKERS)
        with self.serve() as store:
            waiters, fresh = [], []
            try:
                for source in ATTACKERS:
                    for i in range(per_attacker):
                        waiters.append(waiting_from(source, store.port, i))
                for _ in range(5):  # each kept open, so each needs a place of its own
                    fresh.append(fresh_client(store.port))
                harness.wait_for(lambda: sum(not is_open(w) for w in waiters) == 5,
                                 harness.EVENT_TIMEOUT, "five waiting connections to give way")
                self.assertTrue(all(map(is_open, fresh)), "a fresh client was closed")
            finally:
                for c in waiters + fresh:
                    c.close()
            self.assertIn("waiting for", store.log())
            self.assertNotIn("refusing", store.log())

    def test_silent_connections_over_the_cap_give_way_and_waits_do_not_count(self):
        """One address opens 12 waiting connections (they spoke: not counted), then 17 silent
        ones: the 5 oldest silent ones give way, so it holds 24 of the 40 places. Fresh
        clients, kept open, get the 16 others, then the attacker's newest silent places."""
        with self.serve() as store:
            waiting, silent, fresh = [], [], []
            try:
                for i in range(PER_ADDRESS):
                    waiting.append(waiting_from("127.0.0.2", store.port, i))
                for _ in range(PER_ADDRESS + 5):
                    silent.append(connect_from("127.0.0.2", store.port))
                for i, c in enumerate(silent[:5]):
                    self.assertTrue(c.closed_within(harness.EVENT_TIMEOUT),
                                    f"silent connection {i} did not give way")
                harness.wait_for(lambda: sum(map(is_open, silent)) == PER_ADDRESS,
                                 harness.EVENT_TIMEOUT, "127.0.0.2 to hold its cap of silent ones")
                self.assertTrue(all(map(is_open, waiting)), "a waiting connection was closed")
                for _ in range(MAX_CONNECTIONS - 2 * PER_ADDRESS + 4):
                    fresh.append(fresh_client(store.port))
                for i, c in enumerate(silent[-4:]):
                    self.assertTrue(c.closed_within(harness.EVENT_TIMEOUT),
                                    f"the attacker's newest silent connection {i} did not give way")
                self.assertTrue(all(map(is_open, silent[5:-4])), "an older silent one was closed")
                self.assertTrue(all(map(is_open, waiting)), "a waiting connection was closed")
                self.assertTrue(all(map(is_open, fresh)), "a fresh client was closed")
            finally:
                for c in waiting + silent + fresh:
                    c.close()
            log = store.log()
            self.assertIn(f"limit {PER_ADDRESS} per address", log)
            self.assertIn("silent for", log)
            self.assertNotIn("refusing", log)

    def test_one_address_holds_at_most_its_cap_of_silent_connections(self):
        """Below --max-connections: each silent connection over the cap takes the place of
        the address's oldest silent one, and another address still gets in."""
        with self.serve() as store:
            conns = []
            try:
                for _ in range(PER_ADDRESS + 5):
                    conns.append(connect_from("127.0.0.2", store.port))
                for i, c in enumerate(conns[:5]):
                    self.assertTrue(c.closed_within(harness.EVENT_TIMEOUT),
                                    f"connection {i + 1} of 127.0.0.2 did not give way")
                other = connect_from("127.0.0.3", store.port, Validated)
                other.close()
                self.assertTrue(served(store.port))
                self.assertTrue(all(map(is_open, conns[5:])), "a newer connection was closed")
            finally:
                for c in conns:
                    c.close()
            log = store.log()
            self.assertIn("silent connections are open from 127.0.0.2", log)
            self.assertIn(f"limit {PER_ADDRESS} per address", log)
            self.assertIn("--max-connections-per-address", log)

    def test_zero_means_no_cap(self):
        with store_wire.ServedStore(self, "--max-connections-per-address", 0) as store:
            conns = [connect_from("127.0.0.2", store.port) for _ in range(PER_ADDRESS + 5)]
            try:
                # Accepted in order (one listen queue): all of them are in by now.
                self.assertTrue(served(store.port))
                self.assertTrue(all(map(is_open, conns)), "a connection was refused")
            finally:
                for c in conns:
                    c.close()
            self.assertNotIn("refusing", store.log())


if __name__ == "__main__":
    harness.main()
