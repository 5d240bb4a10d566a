"""A real PyTorch DDP worker for test_multinode_torch.py, one of a job's workers spread
over simulated nodes.

    multinode_ddp_worker.py OUT_DIR PID_DIR

Joins the default process group with gloo through env:// (MASTER_ADDR/MASTER_PORT: the
store of the node agents), all-reduces its rank, trains one DDP step of a tiny model on
data that depends on its rank, and writes OUT_DIR/result.<rank>.json with what it saw:
its launch variables (and the interface variables it was given), its host name, the process group's rank and size, the all-reduce's
sum and the gradients DDP averaged (as numbers and as a checksum of their bytes, which
equal ranks must share exactly). Any problem is an exception (exit 1).
"""

import hashlib
import json
import os
import socket
import sys
from datetime import timedelta

# Generous for 6 workers importing torch at once on a small machine; only a hang reaches it.
# A test that expects the group to fail may shorten it (DDP_WORKER_GROUP_TIMEOUT_S).
PROCESS_GROUP_TIMEOUT = timedelta(seconds=float(os.environ.get("DDP_WORKER_GROUP_TIMEOUT_S", "60")))
# The variables that name the interface each library talks through (what the launcher set).
INTERFACE_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME")


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, path)


def averaged_gradients(torch, rank):
    """One DDP step of Linear(4, 1) on a batch of two rows full of RANK: the gradients DDP
    averaged over every rank, flattened, and the SHA-256 of their bytes."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.full((2, 4), float(rank))).sum().backward()
    flat = torch.cat([p.grad.detach().reshape(-1) for p in model.parameters()])
    return flat.tolist(), hashlib.sha256(flat.numpy().tobytes()).hexdigest()


def main():
    out_dir, pid_dir = sys.argv[1], sys.argv[2]
    # The test's teardown ends what this job left, by these pids.
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    rank = int(os.environ["RANK"])

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=PROCESS_GROUP_TIMEOUT)
    value = torch.tensor([float(rank)])
    dist.all_reduce(value)
    grads, checksum = averaged_gradients(torch, rank)
    process_group_rank, process_group_size = dist.get_rank(), dist.get_world_size()
    dist.barrier()
    dist.destroy_process_group()

    launch = {name.lower(): int(os.environ[name]) for name in (
        "RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE")}
    write_json(os.path.join(out_dir, f"result.{rank}.json"), {
        **launch,
        "master_addr": os.environ["MASTER_ADDR"],
        "master_port": int(os.environ["MASTER_PORT"]),
        "interface_variables": {name: os.environ.get(name) for name in INTERFACE_VARIABLES},
        "host": socket.gethostname(),
        "torch": torch.__version__,
        "process_group_rank": process_group_rank,
        "process_group_size": process_group_size,
        "all_reduce": value.item(),
        "grads": grads,
        "grad_checksum": checksum,
    })


if __name__ == "__main__":
    main()
    # Everything this worker reports is written. PyTorch 2.x sometimes aborts in its own
    # teardown at interpreter exit after a gloo group ("terminate called without an active
    # exception", SIGABRT, about one run in ten on a busy machine, with any launcher), which
    # is not what these tests check: leave without running it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
