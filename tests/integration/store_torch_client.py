"""PyTorch's own TCPStore (1.13 or 2.x, whichever the interpreter running this has) for
test_store_torch.py: a client driven through every query its API can make, and
PyTorch's own server to compare gangrun's with.

    store_torch_client.py serve PORT_FILE [--no-libuv]
    store_torch_client.py script HOST PORT OUT.json [--after-timeout-late-set]
    store_torch_client.py adders HOST PORT KEY COUNT DELTA...

`serve` runs TCPStore(is_master=True) on a free loopback port (2.x: its default libuv
server, or with --no-libuv the older one) and writes {"port", "libuv"} to PORT_FILE.
`script` writes what each call returned, or the type of what it raised, to OUT.json, so
the same run against two servers can be compared (with --after-timeout-late-set: only
the calls 1.13 has, and a key set after a wait for it timed out). `adders` runs one client
per DELTA at once, each calling add(KEY, DELTA) COUNT times, and prints the sum.
"""

import datetime
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist


def seconds(n):
    return datetime.timedelta(seconds=n)


def client(host, port, timeout=30):
    return dist.TCPStore(host, port, is_master=False, timeout=seconds(timeout))


def plain(value):
    """A call's result as JSON: bytes as text (or as hex when not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return "hex:" + value.hex()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def call(r, name, fn):
    """Records what fn() returned under NAME, or {"raised": the exception's type}.
    Returns the result (None when it raised)."""
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 (which exception is what we compare)
        r[name] = {"raised": type(error).__name__}
        return None
    r[name] = plain(value)
    return value


def released_by_other_client(host, port, r, name, wait, release, delay=0.5):
    """Runs wait() on this thread while another client runs release() after DELAY;
    records whether wait returned (and not before the release) or what it raised."""
    def other():
        time.sleep(delay)
        release(client(host, port))

    setter = threading.Thread(target=other)
    setter.start()
    start = time.monotonic()
    call(r, name, wait)
    r[name + "_blocked_until_released"] = time.monotonic() - start >= delay * 0.8
    setter.join()


def common(host, port, r, late_set):
    """The calls a 1.13 client has, all on one connection."""
    store = client(host, port)
    store.set("k", "v1")
    r["get"] = store.get("k").decode()
    store.set("k", "v2")
    r["get_overwritten"] = store.get("k").decode()
    store.set("binary", bytes(range(256)))
    r["get_binary"] = plain(store.get("binary"))
    store.set("empty", "")
    r["get_empty"] = store.get("empty").decode()

    r["add_new"] = store.add("counter", 5)
    r["add_negative"] = store.add("counter", -7)
    r["add_zero"] = store.add("counter", 0)
    r["add_large"] = store.add("big", 2**62)
    r["counter_text"] = store.get("counter").decode()
    store.set("numeric_text", "41")
    r["add_to_set_number"] = store.add("numeric_text", 1)

    r["cas_missing_empty_expected"] = store.compare_set("cas1", "", "first").decode()
    r["cas1_stored"] = store.get("cas1").decode()
    # (1.13 has no check(); the key count shows whether cas2 was stored.)
    keys_before = store.num_keys()
    r["cas_missing_other_expected"] = store.compare_set("cas2", "expected", "desired").decode()
    r["cas2_stored_nothing"] = store.num_keys() == keys_before
    store.set("cas3", "old")
    r["cas_match"] = store.compare_set("cas3", "old", "new").decode()
    r["cas_mismatch"] = store.compare_set("cas3", "old", "newer").decode()
    r["cas3_value"] = store.get("cas3").decode()

    start = time.monotonic()
    call(r, "wait_timeout", lambda: store.wait(["never_set"], seconds(1)))
    r["wait_timeout_took_about_1s"] = 0.8 <= time.monotonic() - start < 10
    # The same client goes on working after its wait timed out.
    store.set("after_timeout", "still works")
    r["get_after_timeout"] = store.get("after_timeout").decode()
    r["add_after_timeout"] = store.add("after_counter", 1)

    if late_set:
        # The key of the abandoned wait appears: the server must not send the
        # abandoned STOP_WAITING into this client's next reply. (PyTorch's own
        # 1.13 server still sends it, and the client may take it for a reply.)
        client(host, port).set("never_set", "late")
        time.sleep(0.3)
        r["get_after_late_set"] = store.get("after_timeout").decode()
        r["add_after_late_set"] = store.add("after_counter", 1)

    released_by_other_client(host, port, r, "wait_released", lambda: store.wait(["k", "released"]),
                             lambda other: other.set("released", "yes"))
    r["get_released"] = store.get("released").decode()
    store.wait(["k"], seconds(5))
    r["wait_present_with_timeout"] = "returned"

    r["num_keys"] = store.num_keys()
    r["delete_present"] = store.delete_key("k")
    r["delete_absent"] = store.delete_key("k")
    r["num_keys_after_delete"] = store.num_keys()


def extended(host, port, r):
    """The calls 2.x clients added, each where this client has it. Every group gets its
    own connection, so a server that closes one on a call it lacks spoils only that group."""
    store = client(host, port)
    r["has"] = sorted(name for name in ("check", "append", "multi_get", "multi_set", "queue_push", "queue_pop",
                                        "queue_len", "list_keys", "barrier", "set_timeout")
                      if hasattr(store, name))

    if hasattr(store, "check"):
        s = client(host, port)
        s.set("ck", "1")
        call(r, "check_present", lambda: s.check(["ck"]))
        call(r, "check_missing", lambda: s.check(["ck_missing"]))
        call(r, "check_some_missing", lambda: s.check(["ck", "ck_missing"]))
        call(r, "check_none", lambda: s.check([]))
        s.delete_key("ck")
        call(r, "check_deleted", lambda: s.check(["ck"]))

    if hasattr(store, "set_timeout"):
        s = client(host, port)
        # (PyTorch's 2.x libuv server wakes waiters on compare_set; its older one does not.)
        released_by_other_client(host, port, r, "wait_released_by_compare_set",
                                 lambda: s.wait(["cas_late"], seconds(3)),
                                 lambda other: other.compare_set("cas_late", "", "set"))
        s.set_timeout(seconds(1))
        call(r, "get_missing_times_out", lambda: s.get("get_missing"))
        call(r, "get_after_get_timed_out", lambda: (s.set("gm", "fine"), s.get("gm"))[1])

    if hasattr(store, "append"):
        s = client(host, port)
        call(r, "append_new", lambda: s.append("ap", "ab"))
        call(r, "append_new_value", lambda: s.get("ap"))
        call(r, "append_more", lambda: s.append("ap", "cd"))
        call(r, "append_more_value", lambda: s.get("ap"))
        call(r, "append_empty", lambda: s.append("ap", ""))
        call(r, "append_empty_value", lambda: s.get("ap"))
        s.set("ap_counter", "12")
        call(r, "append_to_number", lambda: s.append("ap_counter", "3"))
        call(r, "add_to_appended_number", lambda: s.add("ap_counter", 1))
        released_by_other_client(host, port, r, "wait_released_by_append", lambda: s.wait(["ap_late"], seconds(10)),
                                 lambda other: other.append("ap_late", "x"))

    if hasattr(store, "multi_set"):
        s = client(host, port)
        call(r, "multi_set", lambda: s.multi_set(["m1", "m2", "m3"], ["x", "", "z"]))
        call(r, "multi_get", lambda: s.multi_get(["m3", "m1", "m2", "m1"]))
        call(r, "multi_set_overwrites", lambda: s.multi_set(["m1"], ["x2"]))
        call(r, "multi_get_overwritten", lambda: s.multi_get(["m1"]))
        call(r, "multi_get_none", lambda: s.multi_get([]))
        call(r, "multi_set_none", lambda: s.multi_set([], []))
        s.set_timeout(seconds(1))
        call(r, "multi_get_missing_times_out", lambda: s.multi_get(["m1", "m_missing"]))
        call(r, "get_after_multi_get_timed_out", lambda: s.get("m2"))
        released_by_other_client(host, port, r, "wait_released_by_multi_set",
                                 lambda: s.wait(["m_late1", "m_late2"], seconds(10)),
                                 lambda other: other.multi_set(["m_late1", "m_late2"], ["1", "2"]))

    if hasattr(store, "queue_push"):
        s = client(host, port)
        call(r, "queue_len_missing", lambda: s.queue_len("q"))
        for item in ("a", "b", "c"):
            call(r, f"queue_push_{item}", lambda: s.queue_push("q", item))
        call(r, "queue_len_3", lambda: s.queue_len("q"))
        call(r, "check_queue", lambda: s.check(["q"]))
        call(r, "queue_pop_first", lambda: s.queue_pop("q"))
        call(r, "queue_pop_nonblocking", lambda: s.queue_pop("q", block=False))
        call(r, "queue_len_1", lambda: s.queue_len("q"))
        call(r, "queue_pop_last", lambda: s.queue_pop("q"))
        call(r, "queue_pop_empty_nonblocking", lambda: s.queue_pop("q", block=False))
        call(r, "queue_len_0", lambda: s.queue_len("q"))
        released_by_other_client(host, port, r, "queue_pop_released_by_push", lambda: s.queue_pop("q2"),
                                 lambda other: other.queue_push("q2", "late item"))
        s.set_timeout(seconds(1))
        call(r, "queue_pop_empty_times_out", lambda: s.queue_pop("q3"))
        call(r, "queue_len_after_pop_timed_out", lambda: s.queue_len("q2"))

    if hasattr(store, "barrier"):
        s = client(host, port)
        call(r, "barrier_of_one", lambda: s.barrier("bar1", 1, seconds(5)))
        released_by_other_client(host, port, r, "barrier_of_two", lambda: s.barrier("bar2", 2, seconds(10)),
                                 lambda other: other.barrier("bar2", 2, seconds(10)))
        call(r, "barrier_short_times_out", lambda: s.barrier("bar3", 2, seconds(1)))
        call(r, "get_after_barrier_timed_out", lambda: (s.set("bt", "fine"), s.get("bt"))[1])

    if hasattr(store, "list_keys"):
        call(r, "list_keys", lambda: sorted(client(host, port).list_keys()))
    r["num_keys_at_end"] = client(host, port).num_keys()

    # Last, on a connection of its own: a value that is not a number cannot be added to.
    s = client(host, port)
    s.set("not_a_number", "abc")
    call(r, "add_to_text", lambda: s.add("not_a_number", 1))
    call(r, "other_client_after_add_to_text", lambda: client(host, port).get("not_a_number"))


def script(host, port, out, late_set):
    r = {}
    common(host, port, r, late_set)
    if not late_set:
        extended(host, port, r)
    with open(out, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)


def adders(host, port, key, count, deltas):
    """One client per delta, each on a thread of its own, calls add(KEY, delta) COUNT
    times; then prints what KEY holds. (The store calls release the GIL, so the clients'
    requests interleave at the server as separate processes' would.)"""
    stores = [client(host, port) for _ in deltas]
    threads = [threading.Thread(target=lambda s=s, d=d: [s.add(key, d) for _ in range(count)])
               for s, d in zip(stores, deltas)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(stores[0].add(key, 0))


def serve(port_file, libuv):
    options = {} if libuv else {"use_libuv": False}
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=seconds(60), **options)
    doc = {"port": store.port, "libuv": bool(getattr(store, "libuvBackend", False)), "torch": torch.__version__}
    with open(port_file + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(port_file + ".tmp", port_file)
    time.sleep(600)


def main():
    mode = sys.argv[1]
    if mode == "serve":
        serve(sys.argv[2], "--no-libuv" not in sys.argv[3:])
        return
    host, port = sys.argv[2], int(sys.argv[3])
    if mode == "script":
        script(host, port, sys.argv[4], "--after-timeout-late-set" in sys.argv[5:])
    elif mode == "adders":
        adders(host, port, sys.argv[4], int(sys.argv[5]), [int(d) for d in sys.argv[6:]])
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
