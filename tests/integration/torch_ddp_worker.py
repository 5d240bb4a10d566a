"""A real PyTorch DDP worker for test_torch_ddp.py, test_free_port.py and test_restarts.py.

    torch_ddp_worker.py OUT_DIR PID_DIR [--kill-rank-in-attempt-0 RANK]

Dumps its environment, joins the default process group with gloo through
MASTER_ADDR/MASTER_PORT, all-reduces, trains one DDP step on CPU, and writes
OUT_DIR/result.<rank>.json with what it saw. Any problem is an exception (exit 1).
With --kill-rank-in-attempt-0, in the first attempt (TORCHELASTIC_RESTART_COUNT=0)
RANK kills itself with SIGKILL after the all-reduce, and the others block in the DDP step.
Every attempt also writes OUT_DIR/attempt.<restart>.<rank> with its pid.
"""

import json
import os
import signal
import sys
from datetime import timedelta


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, path)


def main():
    out_dir, pid_dir = sys.argv[1], sys.argv[2]
    kill_rank = int(sys.argv[4]) if sys.argv[3:4] == ["--kill-rank-in-attempt-0"] else None
    rank = int(os.environ["RANK"])
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    with open("/proc/self/cmdline", "rb") as f:
        cmdline = [arg.decode() for arg in f.read().split(b"\0")[:-1]]
    write_json(os.path.join(out_dir, f"env.{rank}.json"), {"pid": os.getpid(), "env": dict(os.environ),
                                                          "argv": sys.argv, "cmdline": cmdline,
                                                          "executable": sys.executable})
    write_json(os.path.join(out_dir, f"attempt.{restart}.{rank}"), {"pid": os.getpid()})

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    world = dist.get_world_size()
    assert dist.get_rank() == rank, (dist.get_rank(), rank)
    assert world == int(os.environ["WORLD_SIZE"]), (world, os.environ["WORLD_SIZE"])

    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    expected_sum = world * (world + 1) / 2
    if restart == 0 and rank == kill_rank:
        os.kill(os.getpid(), signal.SIGKILL)

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    loss = model(torch.full((2, 4), float(rank))).sum()
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    gathered = [torch.zeros_like(grads[0]) for _ in range(world)]
    dist.all_gather(gathered, grads[0])
    same_grads = all(torch.equal(g, gathered[0]) for g in gathered)

    dist.barrier()
    dist.destroy_process_group()
    write_json(os.path.join(out_dir, f"result.{rank}.json"), {
        "rank": rank,
        "restart": restart,
        "torch": torch.__version__,
        "world_size": world,
        "all_reduce": value.item(),
        "expected_sum": expected_sum,
        "ddp_grads_in_sync": same_grads,
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
