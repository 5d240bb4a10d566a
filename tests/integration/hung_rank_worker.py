"""A real PyTorch gloo worker for test_hung_rank.py.

    hung_rank_worker.py PID_DIR MODE RANK [TIMEOUT_S]

Every rank joins the default process group (env://, gloo, torch's default timeout, so that a
slow start on a loaded machine cannot fail it), meets the others in a barrier and makes a
second group whose collectives time out after TIMEOUT_S (default 5). Then RANK, the odd one:
  hang:  writes PID_DIR/hung.pid and sleeps, never reaching the all-reduce;
  leave: exits 0 at once, before the all-reduce.
The others all-reduce on the second group: they time out (hang) or lose their connection to
RANK (leave), and fail with torch's exception (exit 1). Each rank appends its pid to
PID_DIR/all.pids.
"""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def main():
    pid_dir, mode, odd_rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dist.barrier()
    group = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout))
    dist.barrier(group=group)
    print(f"rank {rank} reached the step", flush=True)
    if rank == odd_rank:
        if mode == "leave":
            print(f"rank {rank} leaves before the all-reduce", flush=True)
            os._exit(0)
        with open(os.path.join(pid_dir, "hung.pid.tmp"), "w") as f:
            f.write(str(os.getpid()))
        os.rename(os.path.join(pid_dir, "hung.pid.tmp"), os.path.join(pid_dir, "hung.pid"))
        time.sleep(3600)
    tensor = torch.ones(1)
    dist.all_reduce(tensor, group=group)
    print(f"rank {rank} finished the all-reduce: {tensor.item()}", flush=True)


if __name__ == "__main__":
    main()
