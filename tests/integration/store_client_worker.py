"""A worker for test_store_attacks.py that opens new clients of the job's store late, as a
training script's TCPStore does after its first barrier.

    store_client_worker.py READY_FILE GO_FILE OUT_FILE END_FILE CLIENTS

Creates READY_FILE, then waits until GO_FILE exists, opens CLIENTS new connections to
MASTER_ADDR:MASTER_PORT one after another, each doing PyTorch 2.x's handshake (VALIDATE,
then PING) and a SET and GET of a key of its own, writes "ok" to OUT_FILE, and keeps them
open until END_FILE exists; then it exits 0. {rank} in a path is replaced by RANK. A
connection the store refuses or resets fails it (exit 1, the error on stderr); each wait
ends after harness.EVENT_TIMEOUT seconds with exit 124.
"""

import os
import sys
import time

import harness
import store_wire


def wait_file(path):
    deadline = time.monotonic() + harness.EVENT_TIMEOUT
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(124)
        time.sleep(0.02)


def write_file(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def main():
    rank = os.environ["RANK"]
    ready, go, out, end = (path.replace("{rank}", rank) for path in sys.argv[1:5])
    clients = int(sys.argv[5])
    write_file(ready, "")
    wait_file(go)
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    held = []
    for i in range(clients):
        conn = store_wire.Validated(port, host=host, timeout=harness.EVENT_TIMEOUT)
        held.append(conn)
        key, value = f"/worker/{rank}/{i}", f"rank {rank} client {i}".encode()
        conn.set(key, value)
        got = conn.get(key)
        if got != value:
            sys.exit(f"rank {rank}: client {i} read {got!r} back")
    write_file(out, "ok\n")
    wait_file(end)
    for conn in held:
        conn.close()


if __name__ == "__main__":
    main()
