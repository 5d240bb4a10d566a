"""report.html (docs/report.md): a run with --log-dir leaves report.json and report.html in its
own directory; `gangrun report RUN_DIR` draws the page again from the report.json there.

PageOfAHang runs real PyTorch gloo on CPU, 4 ranks (report_page_worker.py): attempt 0 hangs
(rank 2 in load_batch, the others in an all-reduce) and --on-hang restart restarts it; in
attempt 1 rank 1 exits 3 and is the root cause. Debian's headless Chromium then loads the page
from a file:// URL and dumps its DOM, which must have one lane per rank inside its node's group,
the hung rank and the root cause marked; a screenshot is taken too (GANGRUN_REPORT_SCREENSHOT
names a path to keep it, as docs/images/report-hang.png was made). The page may fetch nothing:
it names no http(s) URL in a src or href, and its Content-Security-Policy forbids any fetch.

ReportCommand needs no torch: the fake worker's run with hostile text in the program's name,
`gangrun report` refreshing the page, and its errors for a bad RUN_DIR.

PageOfTwoNodes needs no torch either: a static job of two nodes on loopback, each with
--log-dir in one directory, rank 3 on node 1 exits 4; `gangrun report DIR0 DIR1` draws one page
of both, and Chromium's DOM of it has every rank's lane inside its own node's group, the root
cause marked and no lane of a stack only; then its errors for directories that are not one
job's nodes, and for an --output whose directory is missing.

Waits are for gangrun's and Chromium's ends, each bounded.
"""

import html.parser
import json
import os
import re
import shutil
import subprocess
import unittest

import harness
import static_nodes
from harness import EVENT_TIMEOUT, TEST_PYTHON, GangrunTestCase

WORKER = os.path.join(harness.HERE, "report_page_worker.py")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
RUN_DIR = re.compile(r"logs of this run: (\S+)")
WORLD = 4
HUNG_RANK = 2
FAILING_RANK = 1
FETCHING = re.compile(r"""(?:src|href)\s*=\s*["']?\s*https?://""", re.IGNORECASE)


class Lanes(html.parser.HTMLParser):
    """The lanes of a DOM: {rank: (node of the enclosing node group, the lane's attributes)}."""

    def __init__(self):
        super().__init__()
        self.open_groups = []  # the node name of each open <g> that is a node group, else None
        self.lanes = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag != "g":
            return
        classes = (attrs.get("class") or "").split()
        if "node" in classes:
            self.open_groups.append(attrs.get("data-node"))
            return
        self.open_groups.append(None)
        if "lane" in classes:
            nodes = [n for n in self.open_groups if n is not None]
            self.lanes[int(attrs["data-rank"])] = (nodes[-1] if nodes else None, attrs)

    def handle_endtag(self, tag):
        if tag == "g" and self.open_groups:
            self.open_groups.pop()


def lanes_of(dom):
    parser = Lanes()
    parser.feed(dom)
    return parser.lanes


class PageTestCase(GangrunTestCase):
    def run_dir(self, result):
        match = RUN_DIR.search(result.stderr + result.stdout)
        self.assertIsNotNone(match, "gangrun did not print the run's directory" + result.describe())
        return match.group(1)

    def chromium(self, *args):
        """Runs headless Chromium on this test's own profile, with every host name unresolvable."""
        if not os.access(CHROMIUM, os.X_OK):
            self.skipTest("no chromium (scripts/install-deps installs Debian's)")
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--user-data-dir={self.path('chromium-profile')}", *args]
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=3 * EVENT_TIMEOUT, start_new_session=True)
        self.assertEqual(done.returncode, 0, f"{argv}\n{done.stderr[-3000:]}")
        return done.stdout

    def assert_self_contained(self, page):
        with open(page, encoding="utf-8") as f:  # valid UTF-8, or this raises
            text = f.read()
        self.assertIsNone(FETCHING.search(text), "the page fetches something")
        self.assertIn("default-src 'none'", text)
        return text

    def refresh(self, run_dir):
        return subprocess.run([harness.GANGRUN, "report", run_dir], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=EVENT_TIMEOUT)


class PageOfAHang(PageTestCase):
    def setUp(self):
        harness.require_torch()
        from test_hang_doctor import py_spy
        self.py_spy = py_spy()
        super().setUp()

    def test_a_hang_then_a_failure_drawn_and_shown_by_chromium(self):
        result = self.gangrun(["--nproc-per-node", WORLD, "--hang-timeout", 3, "--on-hang", "restart",
                               "--max-restarts", 1, "--stack-tool", self.py_spy, "--log-dir", self.path("logs"),
                               "--python", TEST_PYTHON, WORKER, self.pid_dir], timeout=3 * EVENT_TIMEOUT)
        self.assertExit(result, 3)
        run_dir = self.run_dir(result)
        report = self.read_json(os.path.join(run_dir, "report.json"))
        self.assertEqual([a["attempt"] for a in report["attempts"]], [0, 1], result.describe())
        self.assertEqual(report["attempts"][0]["hang"]["action"], "restart")
        self.assertEqual(report["attempts"][1]["root_cause"]["rank"], FAILING_RANK)
        page = os.path.join(run_dir, "report.html")
        self.assert_self_contained(page)

        lanes = lanes_of(self.chromium("--dump-dom", "file://" + page))
        self.assertEqual(set(lanes), set(range(WORLD)), lanes)
        nodes = {node for node, _ in lanes.values()}
        self.assertEqual(len(nodes), 1, lanes)
        self.assertTrue(all(nodes), f"a lane outside its node's group: {lanes}")
        for rank, (_, attrs) in lanes.items():
            self.assertEqual(attrs.get("data-hung") == "true", rank == HUNG_RANK, (rank, attrs))
            self.assertEqual(attrs.get("data-root-cause") == "true", rank == FAILING_RANK, (rank, attrs))

        screenshot = self.path("report.png")
        self.chromium(f"--screenshot={screenshot}", "--window-size=1400,900", "file://" + page)
        with open(screenshot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        if os.environ.get("GANGRUN_REPORT_SCREENSHOT"):
            shutil.copyfile(screenshot, os.environ["GANGRUN_REPORT_SCREENSHOT"])

        # Drawn again from report.json, the page is the one the run left.
        with open(page, "rb") as f:
            written = f.read()
        os.unlink(page)
        done = self.refresh(run_dir)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), page)
        with open(page, "rb") as f:
            self.assertEqual(f.read(), written)


class ReportCommand(PageTestCase):
    def test_hostile_text_is_escaped_and_the_page_is_refreshed(self):
        # The program's name carries markup, quotes, "]]>" and a byte that is not UTF-8.
        hostile = os.path.join(os.fsencode(self.tmp), b'w<script>alert("x")<\\script>]]>\xff')
        os.symlink(harness.FAKE, hostile)
        result = self.gangrun(["--nproc-per-node", 3, "--log-dir", self.path("logs"), "--",
                               os.fsdecode(hostile), "--pid-dir", self.pid_dir, "--echo", "rank {rank} up",
                               "--only-rank", 1, "--exit", 4, "--sleep", 60])
        self.assertExit(result, 4)
        run_dir = self.run_dir(result)
        page = os.path.join(run_dir, "report.html")
        text = self.assert_self_contained(page)
        self.assertNotIn("<script", text.lower())
        self.assertIn("w&lt;script&gt;alert(&quot;x&quot;)&lt;\\script&gt;]]&gt;\ufffd", text)
        lanes = lanes_of(text)
        self.assertEqual(set(lanes), {0, 1, 2})
        self.assertEqual([r for r, (_, a) in lanes.items() if a.get("data-root-cause")], [1])

        os.unlink(page)
        done = self.refresh(run_dir)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(set(lanes_of(harness.read_text(page))), {0, 1, 2})

    def test_a_bad_run_directory_is_named(self):
        missing = self.path("no-such-run")
        done = self.refresh(missing)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"{missing} is no run directory (No such file or directory)", done.stderr)

        empty = self.path("empty")
        os.mkdir(empty)
        done = self.refresh(empty)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"{empty} has no report.json", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(empty, "report.html")))

        for args in ([], ["--json"], [empty, "-o"]):
            done = subprocess.run([harness.GANGRUN, "report", *args], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=EVENT_TIMEOUT)
            self.assertEqual(done.returncode, 2, (args, done.stderr))
            self.assertIn("usage: gangrun report RUN_DIR [RUN_DIR ...] [-o FILE]", done.stderr, args)


class PageOfTwoNodes(PageTestCase):
    FAILING = 3  # on node 1

    def report(self, *args):
        return subprocess.run([harness.GANGRUN, "report", *args], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=EVENT_TIMEOUT)

    def test_one_page_of_every_node(self):
        logs = self.path("logs")
        job = static_nodes.StaticJob(self, 2)
        job.start_all(lambda node: ["--nproc_per_node", 2, "--log-dir", logs, "--", harness.FAKE,
                                    "--pid-dir", self.pid_dir, "--echo", "rank {rank} up",
                                    "--only-rank", self.FAILING, "--exit", 4, "--sleep", 60])
        results = job.finish()
        run_dirs = [self.run_dir(results[node]) for node in (0, 1)]
        for node, run_dir in enumerate(run_dirs):
            self.assertExit(results[node], 4)
            self.assertEqual(self.read_json(os.path.join(run_dir, "report.json"))["plan"]["node_rank"], node)
        run_dirs = [os.path.join(self.tmp, d) if not os.path.isabs(d) else d for d in run_dirs]

        # Given node 1 first: the page is in node-rank order all the same.
        done = self.report(run_dirs[1], run_dirs[0])
        self.assertEqual(done.returncode, 0, done.stderr)
        run_id = self.read_json(os.path.join(run_dirs[0], "report.json"))["run_id"]
        page = os.path.join(logs, f"report-{run_id}.html")
        self.assertEqual(os.path.realpath(done.stdout.strip()), os.path.realpath(page))
        text = self.assert_self_contained(page)

        lanes = lanes_of(self.chromium("--dump-dom", "file://" + page))
        self.assertEqual(set(lanes), {0, 1, 2, 3}, lanes)
        node_of_rank = {rank: node for rank, (node, _) in lanes.items()}
        self.assertTrue(all(node_of_rank.values()), f"a lane outside its node's group: {lanes}")
        self.assertEqual(node_of_rank[0], node_of_rank[1])
        self.assertEqual(node_of_rank[2], node_of_rank[3])
        self.assertNotEqual(node_of_rank[0], node_of_rank[2])
        self.assertTrue(node_of_rank[0].startswith("node 0 "), node_of_rank)
        self.assertTrue(node_of_rank[2].startswith("node 1 "), node_of_rank)
        for rank, (_, attrs) in lanes.items():
            self.assertEqual(attrs.get("data-root-cause") == "true", rank == self.FAILING, (rank, attrs))
        self.assertNotIn('class="elsewhere"', text)
        self.assertNotIn("stack only", text)
        self.assertIn(f"root cause: rank {self.FAILING} on node 1 ", text)
        self.assertEqual(len(re.findall(r'<tr data-node-rank="[01]">', text)), 2)
        # Each node's own page stays its own.
        for node, run_dir in enumerate(run_dirs):
            self.assertEqual(set(lanes_of(harness.read_text(os.path.join(run_dir, "report.html")))),
                             {2 * node, 2 * node + 1})

        done = self.report(run_dirs[1], run_dirs[1] + "/")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"{run_dirs[1]} and {run_dirs[1]}/ are both of 'node 1 (", done.stderr)
        self.assertIn("give each node's run directory once", done.stderr)

        self.write_other_run(run_dirs[0])
        done = self.report(run_dirs[0], self.path("other"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"{run_dirs[0]} is of run '{run_id}' and {self.path('other')} of run 'another'",
                      done.stderr)

        missing = self.path("no-such-dir", "page.html")
        done = self.report(run_dirs[0], run_dirs[1], "--output", missing)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(f"its directory {self.path('no-such-dir')} does not exist", done.stderr)
        self.assertFalse(os.path.exists(self.path("no-such-dir")))

        done = self.report(run_dirs[0], self.path("empty-dir"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("is no run directory", done.stderr)
        self.assertEqual(sorted(os.listdir(logs)),
                         sorted([os.path.basename(d) for d in run_dirs] + [f"report-{run_id}.html"]),
                         "a bad call left a file behind")

    def write_other_run(self, run_dir):
        report = self.read_json(os.path.join(run_dir, "report.json"))
        report["run_id"] = "another"
        report["plan"]["node_rank"] = 1
        report["node"] = None
        os.mkdir(self.path("other"))
        with open(os.path.join(self.path("other"), "report.json"), "w", encoding="utf-8") as f:
            json.dump(report, f)


if __name__ == "__main__":
    harness.main()
