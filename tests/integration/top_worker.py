"""A rank for test_top.py, no torch needed: it records its pid in PID_DIR/<rank>, prints a
line every 0.2 s until the file SILENCE exists (then prints nothing: the gang is silent, a
hang for --hang-timeout), and exits 0 once the file END exists."""

import os
import sys
import time

pid_dir, silence, end = sys.argv[1:4]
rank = int(os.environ["RANK"])
with open(os.path.join(pid_dir, f"{rank}.tmp"), "w") as out:
    out.write(str(os.getpid()))
os.replace(os.path.join(pid_dir, f"{rank}.tmp"), os.path.join(pid_dir, str(rank)))
step = 0
while not os.path.exists(end):
    if not os.path.exists(silence):
        print(f"rank {rank} step {step}", flush=True)
        step += 1
    time.sleep(0.2)
