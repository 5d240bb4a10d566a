"""PyTorch's own TCPStore server, for scripts/bench/store to compare against.

    torch_store_server.py PORT_FILE [--libuv]

Starts TCPStore(is_master=True) on 127.0.0.1 and an ephemeral port, writes the port to
PORT_FILE, and serves until it is killed. Runs under any PyTorch: without --libuv it starts the
interpreter's default server (the only one of PyTorch 1.13); with --libuv it asks for the libuv
backend (use_libuv=True, PyTorch 2.x's default) and fails if it did not get it, so that the
benchmark never compares against a different server than its report names.
"""

import datetime
import os
import sys
import time

import torch.distributed as dist


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--libuv"):
        sys.exit("usage: torch_store_server.py PORT_FILE [--libuv]")
    port_file = sys.argv[1]
    options = {"is_master": True, "wait_for_workers": False,
               "timeout": datetime.timedelta(seconds=600)}
    libuv = len(sys.argv) == 3
    if libuv:
        options["use_libuv"] = True
    store = dist.TCPStore("127.0.0.1", 0, **options)
    if libuv and not getattr(store, "libuvBackend", False):
        sys.exit("torch_store_server.py: this PyTorch did not start the libuv server")
    with open(port_file + ".tmp", "w") as f:
        f.write(str(store.port))
    os.rename(port_file + ".tmp", port_file)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
