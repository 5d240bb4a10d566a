"""Prints what a worker sees, on one line: DEEPSPEED_PROBE {json}. Run by both deepspeed
and gangrun in test_deepspeed_parity. --init: deepspeed.init_distributed(gloo) and its
rank and world size; --fail-rank R: that rank exits 3 after printing."""

import fcntl
import json
import os
import sys
import time


def ancestors():
    pids, pid = [], os.getppid()
    while pid > 1:
        pids.append(pid)
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return pids


def pid_files():
    """deepspeed's --save_pid files named after one of our ancestors: name -> content."""
    found = {}
    for pid in ancestors():
        path = f"/tmp/{pid}.deepspeed"
        if os.path.exists(path):
            with open(path) as f:
                found[str(pid)] = f.read().strip()
    return found


def main():
    args = sys.argv[1:]
    with open("/proc/self/status") as f:
        cpus = f.read().split("Cpus_allowed_list:")[1].split()[0]
    seen = {"argv": args, "env": dict(os.environ), "cpus": cpus, "pid_files": pid_files(),
            "ancestors": ancestors()}
    if "--init" in args:
        import deepspeed
        import torch.distributed as dist
        deepspeed.init_distributed(dist_backend="gloo")
        seen["dist"] = [dist.get_rank(), dist.get_world_size()]
        dist.destroy_process_group()
    # Under deepspeed the ranks share one stdout pipe, and a record (the whole environment)
    # may pass the pipe's atomic write size: ranks take turns through a lock in the working
    # directory (the test's), so that records never interleave.
    with open("deepspeed-probe.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sys.stdout.write("DEEPSPEED_PROBE " + json.dumps(seen) + "\n")
        sys.stdout.flush()
    # Rank 0 says it has printed (in the working directory, by run: the port is each
    # run's own), so that the failing rank cannot end the run before rank 0 printed.
    done = f"probe-{os.environ.get('MASTER_PORT')}-printed"
    if os.environ.get("RANK") == "0":
        open(done, "w").close()
    if "--fail-rank" in args and os.environ.get("RANK") == args[args.index("--fail-rank") + 1]:
        deadline = time.monotonic() + 60
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.02)
        sys.exit(3)


if __name__ == "__main__":
    main()
