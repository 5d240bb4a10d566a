"""A worker whose lines torch 2.x itself tags with "[rank<R>]:": with TORCH_CPP_LOG_LEVEL=INFO
and TORCH_DISTRIBUTED_DEBUG=DETAIL, c10d logs each collective as "[rank1]:[I... ] ... Running
collective"; once init_process_group knows the rank, its excepthook prints an uncaught
exception's traceback as "[rank1]: Traceback ...". Rank 1 raises after a barrier; rank 0
exits 0. Used by test_output_prefix.py."""

import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
print(f"plain line from rank {rank}", flush=True)
if rank == 1:
    raise RuntimeError("rank 1 fails on purpose")
