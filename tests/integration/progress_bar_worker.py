"""A worker for test_hang_progress_bar.py: a gang hung while every rank's progress bar is
redrawn without advancing.

    progress_bar_worker.py PID_DIR

Every rank records its pid (hang_doctor_worker.record_pid) and prints a line every 0.2 s until
its bar begins, joins a gloo group (on CPU, timing out only after 300 s), and draws a bar of 10
steps in tqdm's form on stderr, advancing it to 5/10. From then on a thread redraws the bar
every 0.2 s, unchanged but for its elapsed time, as tqdm's refresh() does: with tqdm
importable, tqdm itself; without it (Debian's python3 has none), the same bytes by hand. Once
the bar has been redrawn three times the rank writes PID_DIR/stalled.<rank>; then rank 1
waits in wait_for_batch for an event that never comes, and rank 0 blocks in an all-reduce
rank 1 never reaches. Nothing else is printed until the ranks are stopped.
"""

import os
import sys
import threading
import time
from datetime import timedelta

from hang_doctor_worker import StartingLines, record_pid

HUNG_RANK = 1
TOTAL = 10
STALLED_AT = 5
REDRAW_EVERY = 0.2
REDRAWS_BEFORE_STALLED = 3


class HandDrawnBar:
    """What tqdm(total=TOTAL) writes, for an interpreter without tqdm: "\\r" and the bar, its
    elapsed time counted from its start and its rate fixed once it stops advancing."""

    def __init__(self, total):
        self.total, self.n, self.start = total, 0, time.monotonic()
        self.rate = None
        self.refresh()

    def update(self, n):
        self.n += n
        self.rate = self.n / max(time.monotonic() - self.start, 1e-3)
        self.refresh()

    def refresh(self):
        elapsed = time.monotonic() - self.start
        filled = self.n * 10 // self.total
        bar = "█" * filled + " " * (10 - filled)
        if self.rate:
            left, rate = clock((self.total - self.n) / self.rate), f"{self.rate:5.2f}"
        else:
            left, rate = "?", "?"
        text = f"{100 * self.n // self.total:3d}%|{bar}| {self.n}/{self.total} [{clock(elapsed)}<{left}, {rate}it/s]"
        sys.stderr.write("\r" + text)
        sys.stderr.flush()


def clock(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes:02d}:{seconds:02d}"


def make_bar():
    try:
        from tqdm import tqdm
    except ImportError:
        return HandDrawnBar(TOTAL)
    return tqdm(total=TOTAL, file=sys.stderr, mininterval=0)


def keep_redrawing(bar, redrawn):
    """Redraws BAR every REDRAW_EVERY seconds, forever; sets REDRAWN after the first few."""
    count = 0
    while True:
        time.sleep(REDRAW_EVERY)
        bar.refresh()
        count += 1
        if count == REDRAWS_BEFORE_STALLED:
            redrawn.set()


def wait_for_batch():
    """Where the hung rank waits: an event nobody sets."""
    threading.Event().wait()


def main():
    pid_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    record_pid(pid_dir, rank)
    starting = StartingLines(rank)
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    dist.barrier()
    starting.stop()
    bar = make_bar()
    for _ in range(STALLED_AT):
        time.sleep(0.05)
        bar.update(1)
    redrawn = threading.Event()
    threading.Thread(target=keep_redrawing, args=(bar, redrawn), daemon=True).start()
    redrawn.wait()
    with open(os.path.join(pid_dir, f"stalled.{rank}"), "w"):
        pass
    if rank == HUNG_RANK:
        wait_for_batch()
    dist.all_reduce(torch.ones(1))


if __name__ == "__main__":
    main()
