"""PyTorch's own TCPStore client (is_master=False) driven through every query a 1.13
program can make, for test_store_torch.py.

    store_torch_client.py script HOST PORT OUT.json [--after-timeout-late-set]
    store_torch_client.py adder HOST PORT KEY COUNT DELTA

`script` writes what each call returned to OUT.json, so the same run against two servers
can be compared. `adder` calls add(KEY, DELTA) COUNT times (for concurrent adds).
"""

import datetime
import json
import sys
import threading
import time

import torch.distributed as dist


def client(host, port, seconds=30):
    return dist.TCPStore(host, port, is_master=False, timeout=datetime.timedelta(seconds=seconds))


def script(host, port, out, late_set):
    store = client(host, port)
    r = {}
    store.set("k", "v1")
    r["get"] = store.get("k").decode()
    store.set("k", "v2")
    r["get_overwritten"] = store.get("k").decode()
    store.set("binary", bytes(range(256)))
    r["get_binary"] = list(store.get("binary"))
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
    # (TCPStore in 1.13 has no check(); the key count shows whether cas2 was stored.)
    keys_before = store.num_keys()
    r["cas_missing_other_expected"] = store.compare_set("cas2", "expected", "desired").decode()
    r["cas2_stored_nothing"] = store.num_keys() == keys_before
    store.set("cas3", "old")
    r["cas_match"] = store.compare_set("cas3", "old", "new").decode()
    r["cas_mismatch"] = store.compare_set("cas3", "old", "newer").decode()
    r["cas3_value"] = store.get("cas3").decode()

    start = time.monotonic()
    try:
        store.wait(["never_set"], datetime.timedelta(seconds=1))
        r["wait_timeout"] = "returned"
    except RuntimeError as error:
        r["wait_timeout"] = "RuntimeError"
        r["wait_timeout_message_mentions_timeout"] = "imeout" in str(error)
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

    def release():
        time.sleep(0.5)
        client(host, port).set("released", "yes")

    setter = threading.Thread(target=release)
    setter.start()
    start = time.monotonic()
    store.wait(["k", "released"])
    r["wait_released_by_other_client"] = store.get("released").decode()
    r["wait_blocked_until_set"] = time.monotonic() - start >= 0.4
    setter.join()
    store.wait(["k"], datetime.timedelta(seconds=5))
    r["wait_present_with_timeout"] = "returned"

    r["num_keys"] = store.num_keys()
    r["delete_present"] = store.delete_key("k")
    r["delete_absent"] = store.delete_key("k")
    r["num_keys_after_delete"] = store.num_keys()

    with open(out, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)


def adder(host, port, key, count, delta):
    store = client(host, port)
    for _ in range(count):
        store.add(key, delta)


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "script":
        script(host, port, sys.argv[4], "--after-timeout-late-set" in sys.argv[5:])
    elif mode == "adder":
        adder(host, port, sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
