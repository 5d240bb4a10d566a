"""A worker for test_report_page.py: a run that hangs, is restarted, and then fails.

    report_page_worker.py PID_DIR

Attempt 0 (TORCHELASTIC_RESTART_COUNT 0), real PyTorch gloo on CPU: every rank prints a line
every 0.2 s until it reaches its step (hang_doctor_worker.StartingLines, so that importing torch
is never silent for the hang timeout); then rank 2 waits in load_batch while the others block in
an all-reduce it never reaches, printing nothing: a hang. Attempt 1 (after --on-hang restart):
no torch; every rank prints that it is up, rank 1 exits 3, the others wait until gangrun stops
them, so rank 1 is the root cause. Pids go to PID_DIR as hang_doctor_worker records them.
"""

import os
import sys
from datetime import timedelta

from hang_doctor_worker import HUNG_RANK, StartingLines, load_batch, record_pid, wait_for_peers

FAILING_RANK = 1


def main():
    pid_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    record_pid(pid_dir, rank)
    if os.environ["TORCHELASTIC_RESTART_COUNT"] != "0":
        print(f"rank {rank}: up again", flush=True)
        if rank == FAILING_RANK:
            sys.exit(3)
        wait_for_peers()
    starting = StartingLines(rank)
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    dist.barrier()
    starting.stop()
    if rank == HUNG_RANK:
        load_batch()
    dist.all_reduce(torch.ones(1))


if __name__ == "__main__":
    main()
