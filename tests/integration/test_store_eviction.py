"""The store's connection table cannot be taken over (security audit: eviction by idle
connections). Against `gangrun store serve` with a small --max-connections: pending WAITs
and silent connections opened from several loopback addresses give way to a fresh client
instead of locking it out, and no address holds more than --max-connections-per-address.

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

    def test_silent_connections_and_waits_cannot_lock_out_or_pass_the_cap(self):
        """Three addresses each try twice their share, silent and waiting connections mixed:
        each is held to --max-connections-per-address (36 of the 40 places), and fresh clients,
        kept open, get the rest and then the attackers' places."""
        attackers = ATTACKERS[:3]
        with self.serve() as store:
            held = {source: [] for source in attackers}
            fresh = []
            try:
                for round_ in range(2 * PER_ADDRESS):
                    for source in attackers:
                        try:
                            if round_ % 2:
                                held[source].append(waiting_from(source, store.port, round_))
                            else:
                                held[source].append(connect_from(source, store.port))
                        except (OSError, AssertionError):
                            pass  # refused: it may be closed before its handshake ends
                for source, conns in held.items():
                    harness.wait_for(lambda: sum(map(is_open, conns)) == PER_ADDRESS,
                                     harness.EVENT_TIMEOUT, f"{source} to be held to its cap")
                for _ in range(MAX_CONNECTIONS - len(attackers) * PER_ADDRESS + 4):
                    fresh.append(fresh_client(store.port))
                harness.wait_for(lambda: sum(sum(map(is_open, conns)) for conns in held.values())
                                 == len(attackers) * PER_ADDRESS - 4,
                                 harness.EVENT_TIMEOUT, "four attackers' places to be taken")
                self.assertTrue(all(map(is_open, fresh)), "a fresh client was closed")
            finally:
                for c in fresh + [c for conns in held.values() for c in conns]:
                    c.close()
            log = store.log()
            self.assertIn(f"limit {PER_ADDRESS} per address", log)
            self.assertIn("idle for", log)  # the silent ones went first

    def test_one_address_holds_at_most_its_cap(self):
        """Below --max-connections (nothing is reclaimed): the connections over the cap are
        refused at once, the others stay, and another address still gets in."""
        with self.serve() as store:
            conns = []
            try:
                for _ in range(PER_ADDRESS + 5):
                    conns.append(connect_from("127.0.0.2", store.port))
                for i, c in enumerate(conns[PER_ADDRESS:]):
                    self.assertTrue(c.closed_within(harness.EVENT_TIMEOUT),
                                    f"connection {PER_ADDRESS + i + 1} of 127.0.0.2 was let in")
                other = connect_from("127.0.0.3", store.port, Validated)
                other.close()
                self.assertTrue(served(store.port))
                self.assertTrue(all(map(is_open, conns[:PER_ADDRESS])), "a connection within the cap was closed")
            finally:
                for c in conns:
                    c.close()
            log = store.log()
            self.assertIn("refusing a connection from 127.0.0.2:", log)
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
