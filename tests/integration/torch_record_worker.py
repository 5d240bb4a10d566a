"""A real PyTorch worker that fails through torch.distributed.elastic's @record.

    torch_record_worker.py PID_DIR MARKER FAILING_RANK

FAILING_RANK silences its own stderr first, so MARKER can reach gangrun's console only
through the TORCHELASTIC_ERROR_FILE that @record writes. The other ranks wait to be torn down.
"""

import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record


def write_pid(pid_dir, rank):
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    tmp = os.path.join(pid_dir, f"worker.{rank}.pid.tmp")
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(tmp, os.path.join(pid_dir, f"worker.{rank}.pid"))


@record
def main():
    pid_dir, marker, failing_rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rank = int(os.environ["RANK"])
    write_pid(pid_dir, rank)
    if rank == failing_rank:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        raise RuntimeError(f"{marker} raised by rank {rank}")
    time.sleep(60)


if __name__ == "__main__":
    main()
