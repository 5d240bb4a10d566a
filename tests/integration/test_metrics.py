"""--metrics-addr: each node agent serves Prometheus' text format at /metrics and a liveness
check at /healthz (docs/metrics.md).

A real 2-node job on loopback, each agent at a port of its own (port 0, found in the job's
registry file), is scraped by Debian's own Prometheus server until its query API shows both
targets up and the series there; promtool finds nothing to say of the text; neither the job's
secret nor a stack ever appears in it. Requests that are not a scrape (too large, junk, idle
sockets by the hundred, a request sent a byte at a time) are turned away or timed out while the
agent goes on serving and the job ends as it would have.
"""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import EVENT_TIMEOUT
from test_control_plane import SECRET, ControlPlaneCase

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"


def get(address, path, method="GET"):
    """(status, body) of METHOD http://ADDRESS/PATH."""
    request = urllib.request.Request(f"http://{address}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=EVENT_TIMEOUT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def raw_exchange(address, data):
    """What the server answers to DATA sent on a fresh socket, until it closes it."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=EVENT_TIMEOUT) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we still sent: a refusal too
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


class Metrics(ControlPlaneCase):
    def setUp(self):
        super().setUp()
        self.runtime = self.path("runtime")
        os.mkdir(self.runtime, 0o700)

    def env(self, secret=SECRET):
        return harness.clean_env(GANGRUN_JOB_SECRET=secret, XDG_RUNTIME_DIR=self.runtime)

    def metrics_addresses(self, count):
        """The addresses the job's COUNT agents serve /metrics at, from their registry files."""
        def registered():
            found = []
            for entry in glob.glob(os.path.join(self.runtime, "gangrun", "*.json")):
                try:
                    metrics = json.loads(harness.read_text(entry)).get("metrics")
                except ValueError:
                    return None  # being written
                if metrics:
                    found.append(metrics)
            return sorted(found) if len(found) >= count else None
        return harness.wait_for(registered, EVENT_TIMEOUT, f"{count} agents' metrics addresses")

    def start_prometheus(self, targets):
        """Debian's Prometheus scraping TARGETS every second; its address. Stopped by pid."""
        port = harness.free_port()
        config = self.path("prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: gangrun\n    static_configs:\n"
                    f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        log = open(self.path("prometheus.log"), "wb")
        proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.path('tsdb')}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
        log.close()

        def stop():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=EVENT_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.addCleanup(stop)
        return f"127.0.0.1:{port}", proc

    def query(self, prometheus, expression):
        status, body = get(prometheus, "/api/v1/query?query=" + urllib.parse.quote(expression))
        return json.loads(body)["data"]["result"] if status == 200 else None

    def test_prometheus_scrapes_both_nodes_of_a_job(self):
        if not (os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK)):
            self.skipTest("needs Debian's prometheus (scripts/install-deps installs it)")
        self.two_nodes(self.worker("--wait-file", self.path("go"), 300), extra=["--metrics-addr", "0"])
        addresses = self.metrics_addresses(2)
        self.assertEqual(len(set(addresses)), 2, addresses)
        for address in addresses:
            self.assertTrue(address.startswith("127.0.0.1:"), f"{address}: not loopback by default")
            status, text = get(address, "/metrics")
            self.assertEqual(status, 200, text)
            self.assertIn('gangrun_workers{run_id="', text)
            self.assertNotIn(SECRET, text)
            for stack_word in ("Traceback", 'File "', "py-spy", "Thread "):
                self.assertNotIn(stack_word, text)
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True,
                                   timeout=EVENT_TIMEOUT)
            self.assertEqual((check.returncode, check.stdout + check.stderr), (0, ""), text)
            self.assertEqual(get(address, "/healthz"), (200, "ok running\n"))

        prometheus, proc = self.start_prometheus(addresses)

        def both_up():
            self.assertIsNone(proc.poll(), harness.read_text(self.path("prometheus.log")))
            try:
                status, body = get(prometheus, "/api/v1/targets")
            except OSError:
                return None  # not listening yet
            targets = json.loads(body)["data"]["activeTargets"] if status == 200 else []
            return len(targets) == 2 and all(t["health"] == "up" for t in targets) or None
        harness.wait_for(both_up, 2 * EVENT_TIMEOUT, "Prometheus to scrape both agents", interval=0.2)

        def series_there():
            running = self.query(prometheus, 'gangrun_workers{state="running"}')
            nodes = self.query(prometheus, "gangrun_nodes_in_round")
            store = self.query(prometheus, "gangrun_store_requests_total")
            progress = self.query(prometheus, "gangrun_rank_seconds_since_progress")
            if not (running and nodes and store and progress) or len(running) < 2 or len(progress) < 2:
                return None
            return running, nodes, store, progress
        running, nodes, store, progress = harness.wait_for(series_there, 2 * EVENT_TIMEOUT,
                                                           "the job's series in Prometheus", interval=0.2)
        self.assertEqual(sorted(r["value"][1] for r in running), ["1", "1"])
        self.assertEqual({r["value"][1] for r in nodes}, {"2"})
        self.assertEqual(len(store), 1, "only the agent hosting the store counts its requests")
        self.assertGreater(float(store[0]["value"][1]), 0)
        self.assertEqual(sorted(r["metric"]["rank"] for r in progress), ["0", "1"])

        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 0)

    def test_attacks_leave_the_agent_serving_and_the_job_unharmed(self):
        agent = self.start(["--nproc_per_node", 2, "--metrics-addr", "127.0.0.1:0",
                            *self.worker("--wait-file", self.path("go"), 300)], env=self.env())
        self.wait_ready(2)
        (address,) = self.metrics_addresses(1)
        host, port = address.rsplit(":", 1)

        idle = [socket.create_connection((host, int(port)), timeout=EVENT_TIMEOUT) for _ in range(200)]
        self.addCleanup(lambda: [s.close() for s in idle])
        slow = socket.create_connection((host, int(port)), timeout=EVENT_TIMEOUT)
        self.addCleanup(slow.close)
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end of its header

        oversized = raw_exchange(address, b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 100_000 + b"\r\n\r\n")
        self.assertNotIn(b" 200 ", oversized.split(b"\r\n", 1)[0])
        junk = raw_exchange(address, bytes(range(256)) * 16)
        self.assertTrue(junk == b"" or junk.startswith(b"HTTP/1.1 400"), junk[:80])
        self.assertTrue(raw_exchange(address, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                        .startswith(b"HTTP/1.1 405"))
        self.assertTrue(raw_exchange(address, b"GET /debug HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 404"))
        with_body = raw_exchange(address, b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        self.assertNotIn(b" 200 ", with_body.split(b"\r\n", 1)[0])
        head = raw_exchange(address, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n"), head)

        # Hundreds of sockets still open, one request stuck halfway: a scrape gets through.
        status, text = get(address, "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('gangrun_workers{run_id="', text)
        self.assertEqual(get(address, "/healthz")[0], 200)
        # The request sent halfway is cut off by its deadline, not kept.
        self.assertEqual(slow.recv(1), b"")

        self.release()
        self.assertExit(self.finish(agent), 0)

    def test_a_bad_metrics_address_is_named(self):
        for address, words in (("localhost:99999", "the port is a number 0..65535"),
                               ("::1:9400", "an IPv6 address goes in brackets"),
                               ("192.0.2.1:0", "not an address of this host")):
            result = self.gangrun(["--metrics-addr", address, "--nproc_per_node", 1, *self.fake("--exit", 0)],
                                  env=self.env())
            self.assertExit(result, 2)
            self.assertIn("--metrics-addr", result.stderr)
            self.assertIn(words, result.stderr)


if __name__ == "__main__":
    harness.main()
