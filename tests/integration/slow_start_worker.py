"""A worker for test_slow_start.py: a gang whose start is slow, silent, and then goes well.

    slow_start_worker.py PID_DIR GATE

Every rank records its pid (hang_doctor_worker.record_pid), then imports slow_start_module
(beside this file), which writes PID_DIR/importing.<rank> and, inside its import, waits for the
file GATE to exist, printing nothing. Then it imports torch, joins a gloo group on CPU (timing
out only after 300 s), prints "rank R: joined", all-reduces its rank plus one, prints
"rank R: sum S" and exits 0. Before GATE exists a rank has neither printed a line nor connected
to the store: its round is still starting. SLOW_START_RANKS: only those ranks wait
(slow_start_module.py).
"""

import os
import sys
from datetime import timedelta

from hang_doctor_worker import record_pid


def main():
    pid_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    record_pid(pid_dir, rank)
    import slow_start_module  # noqa: F401  (blocks until GATE exists)
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    print(f"rank {rank}: joined", flush=True)
    value = torch.tensor([rank + 1.0])
    dist.all_reduce(value)
    print(f"rank {rank}: sum {int(value.item())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
