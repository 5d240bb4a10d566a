"""A small PyTorch DDP job for `scripts/demo`: gloo backend, CPU only.

gangrun sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; init_process_group reads them.
Each rank checks two things and prints one line for each:
  1. all_reduce: every rank contributes rank+1; the sum must be world*(world+1)/2.
  2. DDP training: ranks start from different random weights and see different data; after
     DistributedDataParallel's initial broadcast and a few steps of averaged gradients, every
     rank must hold bit-identical parameters (compared with an all_gather).
Exits non-zero on any mismatch.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEPS = 3


def check_all_reduce(rank: int, world: int) -> bool:
    value = torch.tensor([rank + 1], dtype=torch.int64)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world * (world + 1) // 2
    ok = value.item() == expected
    print(f"rank {rank}/{world}: all_reduce sum = {value.item()} (expected {expected}) "
          f"{'OK' if ok else 'MISMATCH'}", flush=True)
    return ok


def check_ddp_training(rank: int, world: int) -> bool:
    torch.manual_seed(0)
    target = torch.nn.Linear(8, 1)  # the function to learn, the same on every rank
    torch.manual_seed(1000 + rank)  # different initial weights and data on every rank
    model = torch.nn.Linear(8, 1)
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's weights to every rank
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    losses = []
    for _ in range(STEPS):
        inputs = torch.randn(16, 8)
        with torch.no_grad():
            labels = target(inputs)
        loss = torch.nn.functional.mse_loss(ddp(inputs), labels)
        optimizer.zero_grad()
        loss.backward()  # gradients are averaged over all ranks here
        optimizer.step()
        losses.append(loss.item())

    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(params) for _ in range(world)]
    dist.all_gather(gathered, params)
    ok = all(torch.equal(g, gathered[0]) for g in gathered)
    checksum = params.double().sum().item()
    print(f"rank {rank}/{world}: DDP {STEPS} steps, local loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
          f"parameter checksum {checksum:+.6f}, "
          f"{'identical on all ranks OK' if ok else 'DIFFERENT across ranks MISMATCH'}",
          flush=True)
    return ok


def main() -> int:
    dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        ok = check_all_reduce(rank, world)
        ok = check_ddp_training(rank, world) and ok
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
