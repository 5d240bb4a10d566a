"""The training script of the Slurm tests (test_slurm.py): what the recipes in
scripts/slurm/ start as train.py, on every node of a real Slurm job, without PyTorch.

    slurm_train_worker.py OUT_DIR ACTION [ARGS]

Every worker first appends its pid to OUT_DIR/all.pids, writes its whole environment and
pid to OUT_DIR/env.<rank>.json and appends its rank to OUT_DIR/started (so that a rank run
twice shows), then does ACTION:

  record          exit 0
  wait            write OUT_DIR/ready.<rank>, then wait until a signal ends the worker
  fail RANK CODE  rank RANK waits until every other worker is ready, then exits CODE; the
                  others write their ready file and wait to be stopped
  usr1            wait for SIGUSR1 (blocked from the start, so none is lost), append
                  "usr1 <rank>" to OUT_DIR/usr1.<rank> and exit 0
  preempt         the first run (SLURM_RESTART_COUNT unset or 0): wait for SIGUSR1, save
                  OUT_DIR/checkpoint.<rank>; rank 0 then waits for every rank's checkpoint
                  and asks for `scontrol requeue $SLURM_JOB_ID`; every worker waits for the
                  requeue to end it. A later run resumes: exit 0 when this rank's checkpoint
                  is there, 1 when not.

Each worker prints "run <restart> rank <rank> <what>" lines that the job's output keeps.
Every wait gives up after WAIT_LIMIT seconds with exit 3, so that a signal that never
comes fails the job instead of hanging it. Only the ready files are written before the
waits, so a test waits for them before it signals.
"""

import json
import os
import signal
import subprocess
import sys
import time

WAIT_LIMIT = 90
GAVE_UP = 3


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def append(path, text):
    with open(path, "a") as f:
        f.write(text + "\n")


def say(restart, rank, what):
    print(f"run {restart} rank {rank} {what}", flush=True)


def give_up(rank, what):
    print(f"rank {rank}: gave up waiting for {what} after {WAIT_LIMIT} s", file=sys.stderr, flush=True)
    sys.exit(GAVE_UP)


def wait_until(condition, rank, what):
    """Polls CONDITION (a worker has no event to wait on for another's file)."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not condition():
        if time.monotonic() > deadline:
            give_up(rank, what)
        time.sleep(0.05)


def wait_for_usr1(rank):
    if signal.sigtimedwait([signal.SIGUSR1], WAIT_LIMIT) is None:
        give_up(rank, "SIGUSR1")


def wait_to_be_ended(rank):
    time.sleep(WAIT_LIMIT)
    give_up(rank, "the signal that ends this worker")


def main(argv):
    out, action, args = argv[0], argv[1], argv[2:]
    # Blocked before anything else: a SIGUSR1 sent once the ready file exists waits here.
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    append(os.path.join(out, "all.pids"), str(os.getpid()))
    write_atomically(os.path.join(out, f"env.{rank}.json"), json.dumps({"pid": os.getpid(), "env": dict(os.environ)}))
    append(os.path.join(out, "started"), str(rank))
    say(restart, rank, "started")
    ready = os.path.join(out, f"ready.{rank}")

    if action == "record":
        return 0
    if action == "wait":
        write_atomically(ready, "")
        wait_to_be_ended(rank)
    if action == "fail":
        failing, code = int(args[0]), int(args[1])
        if rank != failing:
            write_atomically(ready, "")
            wait_to_be_ended(rank)
        others = [os.path.join(out, f"ready.{r}") for r in range(world) if r != failing]
        wait_until(lambda: all(os.path.exists(p) for p in others), rank, "the other workers")
        say(restart, rank, f"exits {code}")
        return code
    if action == "usr1":
        write_atomically(ready, "")
        wait_for_usr1(rank)
        append(os.path.join(out, f"usr1.{rank}"), f"usr1 {rank}")
        say(restart, rank, "got SIGUSR1")
        return 0
    if action == "preempt":
        checkpoint = os.path.join(out, "checkpoint.{}")
        if restart > 0:
            if not os.path.exists(checkpoint.format(rank)):
                say(restart, rank, "found no checkpoint")
                return 1
            say(restart, rank, "resumed from its checkpoint")
            return 0
        write_atomically(ready, "")
        wait_for_usr1(rank)
        write_atomically(checkpoint.format(rank), "saved")
        say(restart, rank, "saved its checkpoint")
        if rank == 0:
            wait_until(lambda: all(os.path.exists(checkpoint.format(r)) for r in range(world)), rank,
                       "every checkpoint")
            subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]], check=True)
            say(restart, rank, "asked for the requeue")
        wait_to_be_ended(rank)
    raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
