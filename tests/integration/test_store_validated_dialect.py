"""The PyTorch 2.x ("validated") dialect and the 2.1-era additions to the legacy one,
sent as raw bytes laid out per lib/store/PROTOCOL.md against `gangrun store serve`
(issue: TCP store, must show 3). Debian ships only PyTorch 1.13, so these bytes stand in
for a 2.x client here."""

import struct
import threading
import time

import harness
import store_wire
from harness import GangrunTestCase
from store_wire import (LEGACY, MAGIC, NOT_READY, READY, STOP_WAITING, VALIDATE_BYTES, VALIDATED, WAIT_CANCELED,
                        Legacy, Validated, blob, i64, u32, u64)


class ValidatedDialect(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.store = store_wire.ServedStore(self)

    def tearDown(self):
        self.store.__exit__(None, None, None)
        super().tearDown()

    def test_validate_and_ping_at_connect_as_one_write(self):
        with store_wire.Wire(self.store.port) as raw:
            raw.send(VALIDATE_BYTES + bytes([VALIDATED["PING"]]) + u32(0xDEADBEEF))
            self.assertEqual(raw.recv_exact(4), struct.pack("<I", 0xDEADBEEF))

    def test_validate_split_across_writes(self):
        with store_wire.Wire(self.store.port) as raw:
            for byte in VALIDATE_BYTES + bytes([VALIDATED["PING"]]) + u32(7):
                raw.send(bytes([byte]))
                time.sleep(0.002)
            self.assertEqual(raw.u32(), 7)

    def test_wrong_magic_closes_only_that_connection(self):
        with Validated(self.store.port) as good, store_wire.Wire(self.store.port) as bad:
            bad.send(b"\x00" + u32(MAGIC ^ 1) + b"\x00" * 8)
            # 00 + wrong magic reads as a legacy SET with a huge key length: closed.
            self.assertTrue(bad.closed_within(5))
            self.assertEqual(good.ping(1), 1)

    def test_basic_queries_use_the_shifted_numbers(self):
        with Validated(self.store.port) as c:
            c.set("/a", b"1")
            self.assertEqual(c.get("/a"), b"1")
            self.assertEqual(c.add("/n", 5), 5)
            self.assertEqual(c.add("/n", -6), -1)
            c.op("COMPARE_SET", blob("/a") + blob("1") + blob("2"))
            self.assertEqual(c.blob(), b"2")
            c.op("CHECK", u64(2) + blob("/a") + blob("/n"))
            self.assertEqual(c.u8(), READY)
            c.op("CHECK", u64(1) + blob("/missing"))
            self.assertEqual(c.u8(), NOT_READY)
            c.op("GETNUMKEYS")
            self.assertEqual(c.i64(), 2)
            c.op("DELETE_KEY", blob("/a"))
            self.assertEqual(c.i64(), 1)
            c.op("WAIT", u64(1) + blob("/n"))
            self.assertEqual(c.u8(), STOP_WAITING)

    def test_multi_set_multi_get_and_append(self):
        with Validated(self.store.port) as c:
            c.op("MULTI_SET", i64(3) + blob("/x") + blob("1") + blob("/y") + blob(b"\x00\xff") + blob("/z") + blob(""))
            c.op("MULTI_GET", u64(3) + blob("/z") + blob("/x") + blob("/y"))
            self.assertEqual([c.blob(), c.blob(), c.blob()], [b"", b"1", b"\x00\xff"])
            c.op("APPEND", blob("/log") + blob("ab"))
            c.op("APPEND", blob("/log") + blob("cd"))
            self.assertEqual(c.get("/log"), b"abcd")

    def test_append_and_multi_set_release_waiters(self):
        with Validated(self.store.port) as waiter, Validated(self.store.port) as writer:
            waiter.op("WAIT", u64(2) + blob("/p") + blob("/q"))
            writer.op("APPEND", blob("/p") + blob("x"))
            self.assertTrue(waiter.nothing_within(0.2), "WAIT answered before every key existed")
            writer.op("MULTI_SET", i64(1) + blob("/q") + blob("y"))
            self.assertEqual(waiter.u8(), STOP_WAITING)

    def test_cancel_wait_without_a_set(self):
        with Validated(self.store.port) as c, Validated(self.store.port) as other:
            c.op("WAIT", u64(1) + blob("/never"))
            self.assertTrue(c.nothing_within(0.2))
            c.op("CANCEL_WAIT")
            self.assertEqual(c.u8(), WAIT_CANCELED)
            other.set("/never", b"now")  # the cancelled wait must not answer any more
            self.assertEqual(c.ping(99), 99)

    def test_cancel_wait_racing_stop_waiting(self):
        # A 2.x client whose wait timed out sends CANCEL_WAIT; the key may appear just
        # before or after. Either STOP_WAITING then WAIT_CANCELED, or WAIT_CANCELED
        # alone, and the connection stays in step.
        outcomes = set()
        with Validated(self.store.port) as c, Validated(self.store.port) as other:
            for i in range(200):
                key = f"/race{i}"
                c.op("WAIT", u64(1) + blob(key))
                racer = threading.Thread(target=other.set, args=(key, b"v"))
                racer.start()
                if i % 3 == 0:
                    time.sleep(0.0005)
                c.op("CANCEL_WAIT")
                racer.join()
                first = c.u8()
                if first == STOP_WAITING:
                    self.assertEqual(c.u8(), WAIT_CANCELED, f"round {i}")
                    outcomes.add("stop then cancel")
                else:
                    self.assertEqual(first, WAIT_CANCELED, f"round {i}")
                    outcomes.add("cancel")
                self.assertEqual(c.ping(i), i, f"round {i}: connection out of step")
        self.assertTrue(outcomes)

    def test_queues(self):
        with Validated(self.store.port) as c, Validated(self.store.port) as pop1, \
                Validated(self.store.port) as pop2:
            c.op("QUEUE_LEN", blob("/q"))
            self.assertEqual(c.i64(), 0)
            c.op("QUEUE_POP", blob("/q"))
            self.assertEqual(c.i64(), 0)  # empty: a count and no value
            c.op("QUEUE_PUSH", blob("/q") + blob("a"))
            c.op("QUEUE_PUSH", blob("/q") + blob("b"))
            c.op("QUEUE_LEN", blob("/q"))
            self.assertEqual(c.i64(), 2)
            c.op("CHECK", u64(1) + blob("/q"))
            self.assertEqual(c.u8(), READY)
            c.op("QUEUE_POP", blob("/q"))
            self.assertEqual((c.i64(), c.blob()), (2, b"a"))
            c.op("QUEUE_POP", blob("/q"))
            self.assertEqual((c.i64(), c.blob()), (1, b"b"))
            # Blocking pop: two poppers wait on the key; one push releases exactly one. A
            # connection's requests are served in order, so a PING's answer proves that what
            # was sent before it has been served, and that any wake-up due is written before it.
            pop1.op("WAIT", u64(1) + blob("/jobs"))
            pop2.op("WAIT", u64(1) + blob("/jobs"))
            for popper in (pop1, pop2):
                self.assertEqual(popper.ping(0x5A5A5A5A), 0x5A5A5A5A)  # its WAIT is registered
            c.op("QUEUE_PUSH", blob("/jobs") + blob("job1"))
            self.assertEqual(c.ping(1), 1)  # the push is served, its wake-up written
            released = []
            for popper in (pop1, pop2):
                popper.op("PING", u32(0x5A5A5A5A))
                first = popper.u8()
                if first == STOP_WAITING:
                    released.append(popper)
                    first = popper.u8()
                self.assertEqual(bytes([first]) + popper.recv_exact(3), u32(0x5A5A5A5A))
            self.assertEqual(len(released), 1, "one push should release exactly one waiting popper")
            released[0].op("QUEUE_POP", blob("/jobs"))
            self.assertEqual((released[0].i64(), released[0].blob()), (1, b"job1"))

    def test_list_keys(self):
        with Validated(self.store.port) as c:
            for key in ("/b", "/a", "init/"):
                c.set(key, b"x")
            c.op("LIST_KEYS")
            count = c.i64()
            self.assertEqual(sorted(c.blob() for _ in range(count)), [b"/a", b"/b", b"init/"])

    def test_barrier_releases_everyone_when_the_count_is_reached(self):
        clients = [Validated(self.store.port) for _ in range(3)]
        try:
            clients[0].op("BARRIER", blob("/bar") + i64(3))
            clients[1].op("BARRIER", blob("/bar") + i64(3))
            self.assertTrue(clients[0].nothing_within(0.2), "released before the third arrived")
            clients[2].op("BARRIER", blob("/bar") + i64(3))
            self.assertEqual([c.u8() for c in clients], [STOP_WAITING] * 3)
        finally:
            for c in clients:
                c.close()

    def test_legacy_dialect_accepts_the_2_1_era_queries(self):
        with Legacy(self.store.port) as c:
            c.op("APPEND", blob("/l") + blob("ab"))
            c.op("MULTI_SET", i64(1) + blob("/m") + blob("v"))
            c.op("MULTI_GET", u64(2) + blob("/l") + blob("/m"))
            self.assertEqual([c.blob(), c.blob()], [b"ab", b"v"])
            c.op("WAIT", u64(1) + blob("/never"))
            c.op("CANCEL_WAIT")
            self.assertEqual(c.u8(), WAIT_CANCELED)
            self.assertEqual(c.num_keys(), 2)

    def test_magic_prefixed_requests(self):
        magic = u32(MAGIC)
        with store_wire.Wire(self.store.port) as c:
            c.send(magic + bytes([LEGACY["SET"]]) + blob("/k") + blob("v"))
            c.send(magic + bytes([LEGACY["GET"]]) + blob("/k"))
            self.assertEqual(c.blob(), b"v")
            c.send(bytes([LEGACY["GETNUMKEYS"]]) + b"\x00" * 7)  # no magic before it: closed
            self.assertTrue(c.closed_within(5))

    def test_pipelined_requests_in_one_write(self):
        with Validated(self.store.port) as c:
            c.send(bytes([VALIDATED["ADD"]]) + blob("/c") + i64(1) +
                   bytes([VALIDATED["ADD"]]) + blob("/c") + i64(1) +
                   bytes([VALIDATED["PING"]]) + u32(5))
            self.assertEqual((c.i64(), c.i64(), c.u32()), (1, 2, 5))


if __name__ == "__main__":
    harness.main()
