"""PyTorch's own TCPStore server, for scripts/bench/store to compare against.

    torch_store_server.py PORT_FILE

Starts TCPStore(is_master=True) on 127.0.0.1 and an ephemeral port, writes the port to
PORT_FILE, and serves until it is killed.
"""

import datetime
import os
import sys
import time

import torch.distributed as dist


def main():
    port_file = sys.argv[1]
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=600))
    with open(port_file + ".tmp", "w") as f:
        f.write(str(store.port))
    os.rename(port_file + ".tmp", port_file)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
