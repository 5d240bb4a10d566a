"""A worker for test_hang_doctor.py: a gang that goes silent with one rank somewhere else.

    hang_doctor_worker.py PID_DIR MODE [PATH]

Every rank records its pid in PID_DIR/worker.<rank>.pid and appends it to PID_DIR/all.pids
(the harness ends what is left of them). Until a rank reaches its step it prints a line every
0.2 s, so that a slow start (importing torch on a loaded machine) is never silent for the
hang timeout; from the step on, nothing prints until the hang is over. The hung rank is rank
2, and it waits in a function named load_batch (a sleep in a loop, so that it never ends on
its own); the text "load_batch" appears in no line a worker prints.

Plain Python (no torch):
  idle:               every rank prints that it is up; rank 2 waits in load_batch, the
                      others in wait_for_peers, until they are stopped.
  lead-done:          the same, but every rank other than rank 2 exits 0 once it is up: the
                      nodes without rank 2 are done while it hangs.
Real PyTorch (gloo on CPU, groups that time out only after 300 s):
  hang:               rank 2 waits in load_batch until it is stopped; the others block in an
                      all-reduce it never reaches.
  hang-until PATH:    the same, but rank 2 goes on to the all-reduce once PATH exists; every
                      rank then prints the sum and exits 0.
  late-init [PATH]:   rank 2 waits in load_batch before init_process_group, which the others
                      block in, waiting for it (torch is imported first, with the lines going);
                      with PATH, until PATH exists: then every rank all-reduces and exits 0.
  hang-first-attempt: "hang" in the first attempt (TORCHELASTIC_RESTART_COUNT 0), and no hang
                      in a later one: every rank all-reduces and exits 0.
  all-reduce-loop:    every rank all-reduces in a loop, printing "rank R: step N" after each
                      step, until it is stopped: a test that stops one rank from outside
                      (SIGSTOP) leaves the others waiting for it in the all-reduce, silent.
  store-busy:         rank 0 writes a key to the store every 0.2 s for 30 writes, printing
                      nothing; the others wait for it in an all-reduce, printing nothing. Every
                      rank then exits 0: the store traffic is the gang's only progress.
  timer:              torch's file timers (gangrun started with TORCHELASTIC_ENABLE_FILE_TIMER=1):
                      every rank takes 3 steps, each under a 3 s timer of scope "step"; in
                      its second step rank 2 waits in load_batch until it is killed. The
                      others finish and exit 0.
  straggle:           DDP (a small linear layer) for 80 steps; each step rank 1 spends 0.15 s
                      in slow_input and the others 0.05 s, so that they wait for it in the
                      backward pass's all-reduce about two thirds of the time. Exits 0.
  balanced:           the same with every rank spending 0.05 s, for 240 steps (as long).
  compute [PATH]:     DDP on a model big enough that a step is CPU work (no sleep anywhere),
                      every rank alike; rank 0 prints "rank 0: step 1" after its first step.
                      Without PATH, 250 steps; with PATH, until PATH exists (every rank learns
                      it from rank 0 in a one-number all-reduce each step) or 3000 steps. A test
                      slows one rank from outside (cpulimit, SIGSTOP/SIGCONT) and the others
                      wait for it. Exits 0.
  fail PATH:          ranks 0, 2, 3 write PATH/entered.<rank> and block in an all-reduce;
                      rank 1 waits for those three files and fails (exit 1) without ever
                      reaching it. So that the others do not fail at once because their
                      connections to rank 1 closed (they would end before anyone could read
                      their stacks), rank 1 first forks a child that keeps its descriptors
                      open and sleeps, its output going nowhere; the worker's shim ends that
                      child with the job.
"""

import itertools
import os
import sys
import threading
import time
from datetime import timedelta

HUNG_RANK = 2
FAILING_RANK = 1
SLOW_RANK = 1
PAUSE = 0.2


def record_pid(pid_dir, rank):
    tmp = os.path.join(pid_dir, f"worker.{rank}.pid.tmp")
    with open(tmp, "w") as f:
        f.write(str(os.getpid()))
    os.rename(tmp, os.path.join(pid_dir, f"worker.{rank}.pid"))
    with open(os.path.join(pid_dir, "all.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")


class StartingLines:
    """Prints "rank R: starting" every PAUSE seconds until stopped (and joined), so that
    the gang is never silent before it reaches its step."""

    def __init__(self, rank):
        self.rank = rank
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            print(f"rank {self.rank}: starting", flush=True)
            self.done.wait(PAUSE)

    def stop(self):
        self.done.set()
        self.thread.join()


def load_batch(until=None):
    """Where the hung rank waits: forever, or until the file UNTIL exists."""
    while until is None or not os.path.exists(until):
        time.sleep(PAUSE)


def wait_for_peers():
    while True:
        time.sleep(PAUSE)


def wait_for_files(paths):
    while not all(os.path.exists(p) for p in paths):
        time.sleep(0.02)


def keep_connections_open(pid_dir):
    """Forks a child that holds this process's descriptors (its gloo connections among them)
    and sleeps; its own output goes to /dev/null, so that it holds no pipe of gangrun's. Its
    pid goes to PID_DIR/all.pids, so the harness checks that it ended with the job."""
    if os.fork() == 0:
        with open(os.path.join(pid_dir, "all.pids"), "a") as f:
            f.write(f"{os.getpid()}\n")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:
            time.sleep(PAUSE)


def idle(rank, starting, others_exit=False):
    starting.stop()
    print(f"rank {rank} is up", flush=True)
    if rank == HUNG_RANK:
        load_batch()
    if not others_exit:
        wait_for_peers()


def train_step(rank, mode, path, pid_dir, starting):
    import torch
    import torch.distributed as dist

    value = torch.ones(1)
    hangs = mode == "hang" or mode == "hang-until" or (
        mode == "hang-first-attempt" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0")
    if mode == "fail":
        starting.stop()
        if rank == FAILING_RANK:
            world = dist.get_world_size()
            wait_for_files([os.path.join(path, f"entered.{r}") for r in range(world) if r != rank])
            keep_connections_open(pid_dir)
            raise RuntimeError(f"rank {rank} fails while the others wait in the all-reduce")
        with open(os.path.join(path, f"entered.{rank}"), "w"):
            pass
    elif mode == "store-busy":
        starting.stop()
        if rank == 0:
            store = dist.distributed_c10d._get_default_store()
            for i in range(30):
                store.set(f"busy/{i}", "x")
                time.sleep(PAUSE)
    elif hangs and rank == HUNG_RANK:
        starting.stop()
        load_batch(path if mode == "hang-until" else None)
    else:
        starting.stop()
    dist.all_reduce(value)
    return value.item()


def all_reduce_loop(rank, starting):
    import torch
    import torch.distributed as dist

    value = torch.ones(1)
    starting.stop()
    for step in itertools.count(1):
        value.fill_(1)
        dist.all_reduce(value)
        print(f"rank {rank}: step {step}", flush=True)
        time.sleep(PAUSE)


def slow_input(seconds):
    time.sleep(seconds)


def ddp_steps(rank, mode, starting):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(16, 16))
    x = torch.randn(8, 16)
    starting.stop()
    steps, pause = (80, 0.15 if rank == SLOW_RANK else 0.05) if mode == "straggle" else (240, 0.05)
    for _ in range(steps):
        slow_input(pause)
        model(x).sum().backward()
    print(f"rank {rank}: {steps} steps done", flush=True)


def compute_steps(rank, starting, until):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    layers = [torch.nn.Linear(256, 256) for _ in range(4)]
    model = DistributedDataParallel(torch.nn.Sequential(*layers))
    x = torch.randn(128, 256)
    starting.stop()
    steps = 3000 if until else 250
    for step in range(1, steps + 1):
        model(x).sum().backward()
        if rank == 0 and step == 1:
            print("rank 0: step 1", flush=True)
        if until:
            stop = torch.tensor([1.0 if rank == 0 and os.path.exists(until) else 0.0])
            dist.all_reduce(stop)
            if stop.item() > 0:
                break
    print(f"rank {rank}: {step} steps done", flush=True)


def timed_steps(rank, starting):
    from torch.distributed.elastic.timer import FileTimerClient, configure, expires

    configure(FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
    starting.stop()
    for step in range(3):
        with expires(after=3, scope="step"):
            if rank == HUNG_RANK and step == 1:
                load_batch()
            time.sleep(PAUSE)
        print(f"rank {rank}: step {step} done", flush=True)


def main():
    pid_dir, mode = sys.argv[1], sys.argv[2]
    path = sys.argv[3] if len(sys.argv) > 3 else None
    rank = int(os.environ["RANK"])
    record_pid(pid_dir, rank)
    starting = StartingLines(rank)
    if mode in ("idle", "lead-done"):
        idle(rank, starting, others_exit=mode == "lead-done")
        return
    if mode == "timer":
        timed_steps(rank, starting)
        return
    import torch.distributed as dist

    if mode == "late-init":
        starting.stop()
        if rank == HUNG_RANK:
            load_batch(path)
    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    dist.barrier()
    if mode == "all-reduce-loop":
        all_reduce_loop(rank, starting)
    if mode in ("straggle", "balanced", "compute"):
        if mode == "compute":
            compute_steps(rank, starting, path)
        else:
            ddp_steps(rank, mode, starting)
        # torch 2.x's teardown of a gloo group with DDP's reducer behind it now and then aborts
        # a rank ("terminate called without an active exception"); the straggler watch is
        # what is tested, so every rank leaves together and skips the teardown.
        dist.barrier()
        os._exit(0)
    total = train_step(rank, mode, path, pid_dir, starting)
    print(f"rank {rank}: all-reduce gave {total}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
