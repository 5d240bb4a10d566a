"""gangrun preflight against a stranger who writes to the job's store (docs/preflight.md): what
came from the store is printed with control characters escaped, and with the job's secret a
fact whose seal does not check is refused and named, never believed.

One node, two ranks, store on loopback. Rank 1's "interpreter" writes nothing: it says it
started (the workers, and so the store's round, are up), then waits for rank 0's result. The
test, playing the stranger, writes rank 1's facts itself with the raw store protocol. Rank 0
runs the real preflight worker under /usr/bin/python3 -S (no torch needed: the forged rank
says it has none). Every wait has a timeout.
"""

import hashlib
import hmac
import json
import os
import stat

import harness
import store_wire
from harness import EVENT_TIMEOUT

PREFLIGHT_FAILED = 6
SECRET = harness.TEST_JOB_SECRET
FACTS_1 = "gangrun_preflight/facts/1"
ESCAPES = "\x1b]0;PWNED\x07"


def forged_facts(host):
    return {"rank": 1, "local_rank": 0, "node_rank": 1, "host": host, "pid": 1, "masks": {},
            "torch": {"error": "ImportError: \x1b[2J\x1b[Hno torch here"},
            "python": {"version": "3.11.2", "executable": "/usr/bin/python3"}}


def sealed_with(key, store_key, payload):
    return hmac.new(key, store_key.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode() + b":" + payload


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
        self.assertNotIn("seals", result.stdout, "no secret, no seals row")

        # --json escapes them as JSON does.
        os.unlink(self.path("rank1-started"))
        result = self.preflight_with_forged_facts(value, harness.clean_env(), "--json")
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertNotIn("\x1b", result.stdout)
        document = json.loads(result.stdout)
        self.assertEqual(document["facts"]["ranks"][1]["host"], ESCAPES)

    def test_with_a_secret_unsealed_facts_are_refused_and_named(self):
        value = json.dumps(forged_facts("forged-host")).encode()
        result = self.preflight_with_forged_facts(value, harness.clean_env(GANGRUN_JOB_SECRET=SECRET))
        self.assertExit(result, PREFLIGHT_FAILED)
        self.assertRegex(result.stdout, rf"(?m)^seals\s+ranks 1\s+FAIL\s+refused what the store held for them: "
                                        rf"{FACTS_1} carries no MAC")
        self.assertIn("the facts of ranks [1] were refused", result.stdout)
        self.assertNotIn("forged-host", result.stdout, "a refused fact is not judged")
        self.assertNotIn(SECRET, result.stdout + result.stderr)

    def test_with_a_secret_facts_sealed_with_another_key_are_refused(self):
        payload = json.dumps(forged_facts("forged-host")).encode()
        for key in (hashlib.sha256(b"a guess").digest(),
                    # The key of another secret, made as gangrun makes it (sealing.hpp).
                    hmac.new(b"another-job-secret-0123456789", b"gangrun preflight\0none", hashlib.sha256).digest()):
            if os.path.exists(self.path("rank1-started")):
                os.unlink(self.path("rank1-started"))
            result = self.preflight_with_forged_facts(sealed_with(key, FACTS_1, payload),
                                                      harness.clean_env(GANGRUN_JOB_SECRET=SECRET))
            self.assertExit(result, PREFLIGHT_FAILED)
            self.assertRegex(result.stdout, rf"(?m)^seals\s+ranks 1\s+FAIL\s+.*{FACTS_1} carries a MAC that this "
                                            rf"job's key did not make")
            self.assertNotIn("forged-host", result.stdout)

    def test_with_a_secret_the_workers_own_facts_are_sealed_and_believed(self):
        # The key the workers seal with is not the secret, and no worker sees the secret.
        script = self.path("show_env.py")
        with open(script, "w") as f:
            f.write("import os, sys\nsys.stderr.write('KEY=%s SECRET=%s\\n' % ("
                    "os.environ.get('GANGRUN_PREFLIGHT_KEY'), os.environ.get('GANGRUN_JOB_SECRET')))\n"
                    f"exec(open(sys.argv[-1]).read())\n")
        python = self.path("python-show-env")
        with open(python, "w") as f:
            f.write(f"#!/bin/sh\nexec /usr/bin/python3 -S {script} \"$@\"\n")
        os.chmod(python, stat.S_IRWXU)
        result = self.gangrun(["preflight", "--nproc-per-node", 2, "--python", python],
                              env=harness.clean_env(GANGRUN_JOB_SECRET=SECRET), timeout=4 * EVENT_TIMEOUT)
        self.assertExit(result, PREFLIGHT_FAILED)  # no torch under -S
        self.assertRegex(result.stdout, r"(?m)^seals\s+node 0 \(.*\)\s+ok\s+every fact that came carried the seal")
        self.assertRegex(result.stdout, r"(?m)^store\s+node 0 \(.*\)\s+ok\s+all 2 ranks reached the store")
        expected = hmac.new(SECRET.encode(), b"gangrun preflight\0none", hashlib.sha256).hexdigest()
        self.assertEqual(result.stderr.count(f"KEY={expected} SECRET=None"), 2, result.describe())
        self.assertNotIn(SECRET, result.stdout + result.stderr)


if __name__ == "__main__":
    harness.main()
