"""Imported by slow_start_worker.py: an import that lasts until the test lets it end, as a
package imported from a slow shared filesystem does. Reads PID_DIR and GATE from the worker's
arguments; writes PID_DIR/importing.<rank> once it is inside the import. With SLOW_START_RANKS
(ranks separated by commas) in the environment, only those ranks wait; the others import at once."""

import os
import sys
import time


def _wait_for_gate():
    pid_dir, gate = sys.argv[1], sys.argv[2]
    slow = os.environ.get("SLOW_START_RANKS")
    if slow is not None and os.environ["RANK"] not in slow.split(","):
        return
    marker = os.path.join(pid_dir, f"importing.{os.environ['RANK']}")
    with open(marker + ".tmp", "w"):
        pass
    os.rename(marker + ".tmp", marker)
    while not os.path.exists(gate):
        time.sleep(0.05)


_wait_for_gate()
