"""Imported by slow_start_worker.py: an import that lasts until the test lets it end, as a
package imported from a slow shared filesystem does. Reads PID_DIR and GATE from the worker's
arguments; writes PID_DIR/importing.<rank> once it is inside the import."""

import os
import sys
import time


def _wait_for_gate():
    pid_dir, gate = sys.argv[1], sys.argv[2]
    marker = os.path.join(pid_dir, f"importing.{os.environ['RANK']}")
    with open(marker + ".tmp", "w"):
        pass
    os.rename(marker + ".tmp", marker)
    while not os.path.exists(gate):
        time.sleep(0.05)


_wait_for_gate()
