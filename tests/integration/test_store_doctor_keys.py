"""The gang doctor's requests leave the store (docs/store.md): every `gangrun top --json` of a job
of two nodes is an ask, which the coordinator turns into a request (or turns away: at most 2 a
second after a burst of 10), and an answer of each node. Only the latest 64 requests, and the
nodes' answers to them, keep their keys; an ask turned away leaves none. So once there have been
64 requests the store's key count (gangrun_store_keys at /metrics of the agent that hosts the
store) stops growing, however many more asks come.

Real agents on loopback, fake workers that wait for a file; every wait is for an event with a
timeout. It takes about 30 s, most of it the coordinator's limit of 2 requests a second; it has
no sanitized twin, since the unit tests run the same code under the sanitizers.
"""

import json
import subprocess

import harness
from harness import EVENT_TIMEOUT
from test_metrics import Metrics, get

KEPT = 64


class DoctorKeys(Metrics):
    def test_old_requests_and_turned_away_asks_leave_the_store(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300),
                                     extra=["--metrics-addr", "0"])
        lead = [a for a in self.metrics_addresses(2) if "gangrun_store_keys{" in get(a, "/metrics")[1]]
        self.assertEqual(len(lead), 1, "one agent hosts the store")

        def keys():
            text = get(lead[0], "/metrics")[1]
            return int(float(next(line.split()[-1] for line in text.splitlines()
                                  if line.startswith("gangrun_store_keys{"))))

        def ask(times):
            for _ in range(times):
                done = subprocess.run([harness.GANGRUN, "top", "--pid", str(other.pid), "--json"],
                                      capture_output=True, text=True, timeout=2 * EVENT_TIMEOUT,
                                      stdin=subprocess.DEVNULL, env=self.env())
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(len(json.loads(done.stdout)["nodes"]), 2, done.stdout)
        ask(KEPT + 2)
        filled = keys()
        ask(10)
        later = keys()
        turned_away = self.stderr_of(head).count("stack requests came faster than 2 a second")
        print(f"\nthe store's keys: {filled} after {KEPT + 2} requests, {later} after {KEPT + 12}; "
              f"{turned_away} asks turned away were logged")
        # Kept, 10 more requests would have left 10 x (request, asked, 2 answers) = 40 more keys,
        # and each ask turned away one more.
        self.assertLessEqual(later, filled + 4, (filled, later))

        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 0)


if __name__ == "__main__":
    harness.main()
