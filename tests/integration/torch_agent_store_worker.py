"""A real PyTorch worker for test_agent_store.py.

    torch_agent_store_worker.py outlive OUT_DIR PID_DIR
        Joins the gloo group through the agent store, all-reduces; rank 0 then exits at
        once and the other ranks go on using the store after it is gone.
    torch_agent_store_worker.py restart OUT_DIR PID_DIR
        Joins, all-reduces, looks for keys a previous attempt left in the store (through
        an extra client without the attempt prefix, as PyTorch 2.6+ workers use the
        store) by counting itself in a key every attempt uses, and in attempt 0 rank 1 then fails.

Writes OUT_DIR/<mode>.<attempt>.<rank>.json with what it saw.
"""

import datetime
import json
import os
import sys
import time


def write_json(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.rename(path + ".tmp", path)


def main():
    mode, out_dir, pid_dir = sys.argv[1:4]
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")

    import torch
    import torch.distributed as dist

    seen = {"use_agent_store": os.environ["TORCHELASTIC_USE_AGENT_STORE"],
            "master": f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"}
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    seen["all_reduce"] = value.item()
    seen["expected_sum"] = world * (world + 1) / 2
    out = os.path.join(out_dir, f"{mode}.{attempt}.{rank}.json")

    if mode == "outlive":
        dist.barrier()
        if rank == 0:
            write_json(out, seen)
            os._exit(0)  # rank 0 leaves without a goodbye; the store must stay
        time.sleep(1.0)
        store = dist.distributed_c10d._get_default_store()
        store.set(f"after_rank0/{rank}", "alive")
        seen["get_after_rank0_left"] = store.get(f"after_rank0/{rank}").decode()
        seen["add_after_rank0_left"] = store.add("after_rank0/count", 1)
        write_json(out, seen)
        return

    if mode == "restart":
        raw = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                            timeout=datetime.timedelta(seconds=30))
        # Every worker of every attempt counts itself in one unprefixed key: a
        # count past the world size means an earlier attempt's key survived.
        seen["marker_count"] = raw.add("attempt_marker", 1)
        write_json(out, seen)
        dist.barrier()
        if attempt == 0 and rank == 1:
            raise SystemExit("rank 1 fails on purpose after init in attempt 0")
        dist.barrier()
        return

    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
    # Everything this worker reports is written. PyTorch 2.x sometimes aborts in its own
    # teardown at interpreter exit after a gloo group ("terminate called without an active
    # exception", SIGABRT, about one run in ten on a busy machine, with any launcher), which
    # is not what these tests check: leave without running it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
