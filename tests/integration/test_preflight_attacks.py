"""gangrun preflight against a stranger who writes to the job's store (docs/preflight.md): what
came from the store is printed with control characters escaped.

One node, two ranks, store on loopback. Rank 1's "interpreter" writes nothing: it says it
started (the workers, and so the store's round, are up), then waits for rank 0's result. The
test, playing the stranger, writes rank 1's facts itself with the raw store protocol. Rank 0
runs the real preflight worker under /usr/bin/python3 -S (no torch needed: the forged rank
says it has none). Every wait has a timeout.
"""

import json
import os
import stat

import harness
import store_wire
from harness import EVENT_TIMEOUT

PREFLIGHT_FAILED = 6
FACTS_1 = "gangrun_preflight/facts/1"
ESCAPES = "\x1b]0;PWNED\x07"


def forged_facts(host):
    return {"rank": 1, "local_rank": 0, "node_rank": 1, "host": host, "pid": 1, "masks": {},
            "torch": {"error": "ImportError: \x1b[2J\x1b[Hno torch here"},
            "python": {"version": "3.11.2", "executable": "/usr/bin/python3"}}


class StoreWriterAttacks(harness.GangrunTestCase):
    def interpreter(self):
        """The interpreter of both ranks: rank 0 runs the preflight, rank 1 only waits."""
        path = self.path("python-rank-1-silent")
        with open(path, "w") as f:
            f.write(f"""#!/bin/sh
if [ "$RANK" = 1 ]; then
  : > {self.path("rank1-started")}
  exec "$GANGRUN_PREFLIGHT_GANGRUN" store get --endpoint "$MASTER_ADDR:$MASTER_PORT" --timeout {EVENT_TIMEOUT} \\
    gangrun_preflight/result >/dev/null
fi
exec /usr/bin/python3 -S "$@"
""")
        os.chmod(path, stat.S_IRWXU)
        return path

    def preflight_with_forged_facts(self, value, env, *extra):
        """Runs the preflight, writes VALUE under rank 1's facts once its workers run; the result."""
        port = harness.free_port()
        proc = self.start(["preflight", "--nproc-per-node", 2, "--master_addr", "127.0.0.1", "--master_port", port,
                           "--python", self.interpreter(), "--preflight-timeout", EVENT_TIMEOUT, *extra], env=env)
        harness.wait_for(lambda: os.path.exists(self.path("rank1-started")) or proc.poll() is not None,
                         EVENT_TIMEOUT, "rank 1 to start")
        with store_wire.Validated(port) as wire:
            wire.set(("/" + FACTS_1).encode(), value)
            self.assertEqual(wire.get(("/" + FACTS_1).encode()), value)
        return self.finish(proc, timeout=4 * EVENT_TIMEOUT)

    def test_escape_sequences_from_the_store_are_printed_escaped(self):
        # Without a secret the forged facts are believed (anyone may write the store), but what
        # they say reaches the terminal escaped.
        value = json.dumps(forged_facts(ESCAPES)).encode()
        result = self.preflight_with_forged_facts(value, harness.clean_env())
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertNotIn("\x1b", result.stdout + result.stderr)
        self.assertNotIn("\x07", result.stdout + result.stderr)
        self.assertIn("node 1 (\\x1b]0;PWNED\\x07): Python 3.11.2", result.stdout)
        self.assertRegex(result.stdout, r"(?m)^torch\s+node 1 \(\\x1b\]0;PWNED\\x07\)\s+FAIL\s+.*"
                                        r"\\x1b\[2J\\x1b\[Hno torch here")

        # --json escapes them as JSON does.
        os.unlink(self.path("rank1-started"))
        result = self.preflight_with_forged_facts(value, harness.clean_env(), "--json")
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertNotIn("\x1b", result.stdout)
        document = json.loads(result.stdout)
        self.assertEqual(document["facts"]["ranks"][1]["host"], ESCAPES)


if __name__ == "__main__":
    harness.main()
