"""A worker that reads what any process of its user could: the environment of every ancestor
(/proc/PID/environ, the gangrun agent's among them) and its own. Writes them as JSON to
OUT_PATTERN with {rank} replaced: {"ancestors": {pid: ["NAME=value", ...]}, "env": {...}}.

Usage: ancestor_environ_worker.py OUT_PATTERN
"""

import json
import os
import sys


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        # The command name is in parentheses and may hold spaces: the fields follow the last ")".
        return int(f.read().rsplit(")", 1)[1].split()[1])


def main():
    ancestors = {}
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                entries = f.read().split(b"\0")
            ancestors[pid] = [entry.decode(errors="replace") for entry in entries if entry]
            pid = parent_of(pid)
        except OSError as error:
            ancestors[pid] = ["unreadable: " + str(error)]
            break
    out = sys.argv[1].replace("{rank}", os.environ["RANK"])
    with open(out + ".part", "w") as f:
        json.dump({"ancestors": ancestors, "env": dict(os.environ)}, f)
    os.replace(out + ".part", out)


main()
