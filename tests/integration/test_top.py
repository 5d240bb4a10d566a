"""gangrun top (docs/top.md) on a 2-node job on loopback, two ranks a node, drawn inside tmux
in an 80x24 terminal: every rank's row, the steps a second each rank's "step N" lines count,
the marks of a stopped rank (the test sends SIGSTOP to rank 2, on the second node) and of a
hung gang (the ranks stop printing: --hang-timeout 2 with --on-hang report, so the gang goes
on), every line within 80 columns; q ends top with the
terminal restored (echo and canonical mode back, the shell's screen back); --once prints one
plain frame and --json one snapshot; and top ends by itself when the job ends, saying how.

The ranks are plain Python (top_worker.py), no torch: the point is the view, not PyTorch. top
runs on the second node's registry entry (--pid of its agent), so its answers come through the
job's store. The tmux server runs on a socket in the test's directory and is killed by it at
the end. Every wait is for an event (a file, a frame showing what is expected, an agent's end)
and has a timeout. When FRAMES_OUT is set, the frames captured are written there (docs/).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

import harness
import static_nodes
from harness import EVENT_TIMEOUT, TEST_PYTHON

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "top_worker.py")
COUNTS = [2, 2]
WORLD = sum(COUNTS)
STOPPED_RANK = 2


@unittest.skipUnless(shutil.which("tmux"), "needs tmux")
class TopInTmux(harness.GangrunTestCase):
    """A tmux server of the test's own, and what both jobs' tests read."""

    def setUp(self):
        super().setUp()
        self.silence = self.path("silence")
        self.end = self.path("end")
        # A socket's path has at most 107 bytes.
        self.socket = self.path("tmux.sock")
        if len(self.socket) > 100:
            self.socket = f"/tmp/gangrun-test-top-{os.getpid()}.sock"
        self.tmux_started = False
        self.tmux_pid = None  # the server's, once started
        self.frames = []  # (what, text) for FRAMES_OUT
        self.addCleanup(self.stop_tmux)

    # ---- tmux -----------------------------------------------------------------------------

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=check,
                              timeout=EVENT_TIMEOUT, stdin=subprocess.DEVNULL)

    def stop_tmux(self):
        if self.tmux_started:
            self.tmux("kill-server", check=False)
        # By pid too: the socket may be gone with the test's directory by now, and a server
        # left running would outlive the test.
        if self.tmux_pid is not None:
            try:
                os.kill(self.tmux_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def start_pane(self, session, command):
        """A detached 80x24 session SESSION running COMMAND under sh; the shell stays (cat) once
        it ends. One server for the test: its shutdown and a new start race on a busy machine."""
        script = f"{command}; echo \"top exited $?\"; stty -a; exec cat"
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "sh", "-c", script)
        self.tmux_started = True
        self.session = session
        if self.tmux_pid is None:
            self.tmux_pid = int(self.tmux("display-message", "-p", "#{pid}").stdout.strip())

    def capture(self):
        return self.tmux("capture-pane", "-p", "-t", self.session).stdout

    def wait_pane(self, predicate, what):
        """The pane's text once PREDICATE(text) holds; fails with the last capture."""
        last = {"text": ""}

        def ready():
            last["text"] = self.capture()
            return last["text"] if predicate(last["text"]) else None
        try:
            return harness.wait_for(ready, EVENT_TIMEOUT, what, interval=0.2)
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- the pane ---\n{last['text']}") from None

    def wait_pids(self, agents, world=WORLD):
        def read(name):
            with open(os.path.join(self.pid_dir, name)) as pid:
                return int(pid.read())

        def all_there():
            names = [n for n in os.listdir(self.pid_dir) if n.isdigit()]
            if any(a.poll() is not None for a in agents.values()):
                return "ended"
            return {int(n): read(n) for n in names} \
                if len(names) == world else None
        pids = harness.wait_for(all_there, EVENT_TIMEOUT, f"{world} worker pid files")
        self.assertNotEqual(pids, "ended", "an agent ended before its workers started")
        return pids

    def top(self, agent, *args):
        return subprocess.run([harness.GANGRUN, "top", "--pid", str(agent.pid), *args], capture_output=True,
                              text=True, timeout=EVENT_TIMEOUT, stdin=subprocess.DEVNULL, env=self.env)

    def rows(self, frame):
        """{rank: row} of the rank rows of FRAME."""
        rows = {}
        for line in frame.splitlines():
            match = re.match(r"\s*(\d+) ", line)
            if match and "gangrun top" not in line:
                rows[int(match.group(1))] = line
        return rows


class TopOfTwoNodes(TopInTmux):
    # ---- the job --------------------------------------------------------------------------

    def start_job(self):
        job = static_nodes.StaticJob(self, len(COUNTS))
        py_spy = os.path.join(os.path.dirname(harness.PEER_PYTHON), "py-spy")
        extra = ["--stack-tool", py_spy] if os.path.exists(py_spy) else []
        return job.start_all(lambda node: ["--nproc_per_node", COUNTS[node], "--hang-timeout", 2, "--on-hang",
                                           "report", *extra, "--python", TEST_PYTHON, WORKER, self.pid_dir,
                                           self.silence, self.end])

    def test_top_shows_every_rank_and_the_marks_in_80_columns_and_q_restores_the_terminal(self):
        self.env = harness.clean_env()
        agents = self.start_job()
        pids = self.wait_pids(agents)
        second = agents[1]

        # --json: one snapshot of both nodes, every rank at its pid, and the steps a second its
        # "step N" lines count, once it has printed two.
        last = {}

        def stepping():
            done = self.top(second, "--json")
            self.assertEqual(done.returncode, 0, done.stderr)
            last["snapshot"] = snapshot = json.loads(done.stdout)
            ranks = [rank for node in snapshot["nodes"] for rank in node["ranks"]]
            return snapshot if all((rank.get("steps_per_second") or 0) > 0 for rank in ranks) else None
        try:
            snapshot = harness.wait_for(stepping, EVENT_TIMEOUT, "every rank's steps a second", interval=0.2)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{last.get('snapshot')}") from None
        self.assertEqual(len(snapshot["nodes"]), 2, snapshot)
        seen = {rank["rank"]: rank["pid"] for node in snapshot["nodes"] for rank in node["ranks"]}
        self.assertEqual(seen, pids, snapshot)
        print(f"\ntop --json read both nodes in {snapshot['read_seconds'] * 1000:.1f} ms")

        # The live view in an 80x24 tmux pane, STEP/S a number on every row.
        self.start_pane("live", f"{harness.GANGRUN} top --pid {second.pid}")
        frame = self.wait_pane(lambda text: len(self.rows(text)) == WORLD and all(
            re.search(r" \d+\.\d\d +\d+ *$", row) for row in self.rows(text).values()),
            "a frame with every rank and its steps a second")
        self.frames.append(("every rank running", frame))

        # Rank 2 stopped, then every rank silent: STOP on rank 2, then HUNG on all.
        os.kill(pids[STOPPED_RANK], signal.SIGSTOP)
        try:
            frame = self.wait_pane(lambda text: "STOP" in self.rows(text).get(STOPPED_RANK, ""),
                                   "rank 2 marked STOP")
            self.frames.append(("rank 2 stopped (SIGSTOP)", frame))
            with open(self.silence, "w"):
                pass
            frame = self.wait_pane(lambda text: all("HUNG" in row for row in self.rows(text).values())
                                   and len(self.rows(text)) == WORLD, "every rank marked HUNG")
            self.frames.append(("the gang hung (--on-hang report), rank 2 still stopped", frame))
            rows = self.rows(frame)
            self.assertIn("HUNG STOP", rows[STOPPED_RANK], frame)
            self.assertIn("marks: 4 hung, 1 stopped", frame)
            for line in frame.splitlines():
                self.assertLessEqual(len(line), 80, line)
            for rank, pid in pids.items():
                self.assertIn(f" {pid} ", rows[rank], frame)

            # --once: plain text, no escape codes, the same marks.
            once = self.top(second, "--once")
            self.assertEqual(once.returncode, 0, once.stderr)
            self.assertNotIn("\x1b", once.stdout)
            self.assertIn("HUNG STOP", self.rows(once.stdout)[STOPPED_RANK], once.stdout)
            self.frames.append(("gangrun top --once, to a pipe", once.stdout))

            # q: top ends, the terminal comes back as it was.
            self.tmux("send-keys", "q")
            after = self.wait_pane(lambda text: "top exited" in text and "baud" in text, "top to exit after q")
            self.assertIn("top exited 0", after)
            self.assertNotIn("gangrun top  run", after, "the frame is still on the shell's screen")
            self.assertRegex(after, r"(?<!-)\bicanon\b", "canonical mode not restored")
            self.assertRegex(after, r"(?<![-\w])echo\b", "echo not restored")
        finally:
            os.kill(pids[STOPPED_RANK], signal.SIGCONT)

        # The job's end ends top, which says how it ended.
        self.start_pane("end", f"{harness.GANGRUN} top --pid {second.pid}")
        self.wait_pane(lambda text: len(self.rows(text)) == WORLD, "a frame before the end")
        with open(self.end, "w"):
            pass
        results = static_nodes.finish(self, agents)
        ended = self.wait_pane(lambda text: "top exited" in text, "top to exit at the job's end")
        # The coordinator's words ("exit code 0"), or, when the agents were gone before top
        # read them (they leave the moment they have read them), that they are gone.
        self.assertRegex(ended, r"gangrun top: the job ended(: exit code 0\n| \(its gangrun, pid \d+, is gone\))", ended)
        self.assertIn("top exited 0", ended)
        for node, result in results.items():
            self.assertEqual(result.returncode, 0, f"agent of node {node}:{result.describe()}")
        self.frames.append(("the job's end", ended.split("top exited")[0].rstrip() + "\n"))
        self.write_frames()

    def test_top_shows_each_ranks_gpu_from_nvml(self):
        """The fake CUDA driver gives each node two GPUs (a rank each); the fake NVML says how
        busy each is and what each worker's pid holds on it: top's GPU% and GMEM columns."""
        fake_cuda, fake_nvml = os.environ.get("FAKE_CUDA_LIBRARY"), os.environ.get("FAKE_NVML_LIBRARY")
        if not fake_cuda or not fake_nvml:
            self.skipTest("ctest sets FAKE_CUDA_LIBRARY and FAKE_NVML_LIBRARY")
        uuids = ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-11111111-2222-3333-4444-555555555555"]
        machine = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": uuid[4:], "pci": f"0000:{0x1a + i:02x}:00.0",
                             "memory": 85899345920, "cc": "9.0", "sms": 132, "speed_rank": 0}
                            for i, uuid in enumerate(uuids)]}
        with open(self.path("cuda.json"), "w") as out:
            json.dump(machine, out)
        nvml = self.path("nvml.json")
        self.env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, GANGRUN_CUDA_LIBRARY=fake_cuda,
                                     FAKE_CUDA_MACHINE=self.path("cuda.json"), GANGRUN_NVML_LIBRARY=fake_nvml,
                                     FAKE_NVML_MACHINE=nvml)
        def write_nvml(processes_of):
            gpus = [{"uuid": uuids[i], "utilization": 30 + 40 * i, "memory_total": 85899345920,
                     "memory_used": 3 << 30, "processes": processes_of(i)} for i in range(2)]
            with open(nvml + ".tmp", "w") as out:
                json.dump({"gpus": gpus}, out)
            os.replace(nvml + ".tmp", nvml)
        # The driver is there before the job, its GPUs idle of the job's processes.
        write_nvml(lambda i: [])
        job = static_nodes.StaticJob(self, len(COUNTS), env=self.env)
        agents = job.start_all(lambda node: ["--nproc_per_node", COUNTS[node], "--visible-devices", "per-rank",
                                             "--python", TEST_PYTHON, WORKER,
                                             self.pid_dir, self.silence, self.end])
        pids = self.wait_pids(agents)
        # Both nodes share this host's two GPUs: local rank L of each node has GPU L. Rank 0 and
        # 1 (node 0) hold 1 GiB and 2 GiB; the GPUs are 30% and 70% busy.
        write_nvml(lambda i: [{"pid": pids[i], "memory": (i + 1) << 30}, {"pid": pids[2 + i], "memory": 512 << 20}])

        last = {}

        def gpu_frame():
            once = self.top(agents[1], "--once")
            last["frame"] = once.stdout + once.stderr
            rows = self.rows(once.stdout) if once.returncode == 0 else {}
            return once.stdout if len(rows) == WORLD and all(" 30 " in rows[r] or " 70 " in rows[r]
                                                             for r in rows) else None
        try:
            frame = harness.wait_for(gpu_frame, EVENT_TIMEOUT, "a frame with every rank's GPU", interval=0.2)
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- the last frame ---\n{last.get('frame')}\n"
                                 f"{self.top(agents[1], '--json').stdout}") from None
        self.assertIn("GPU%", frame)
        rows = self.rows(frame)
        self.assertRegex(rows[0], r" 30 +1\.0G ", frame)
        self.assertRegex(rows[1], r" 70 +2\.0G ", frame)
        self.assertRegex(rows[2], r" 30 +512M ", frame)
        for line in frame.splitlines():
            self.assertLessEqual(len(line), 80, line)
        with open(self.end, "w"):
            pass
        for node, result in static_nodes.finish(self, agents).items():
            self.assertEqual(result.returncode, 0, f"agent of node {node}:{result.describe()}")

    def write_frames(self):
        out = os.environ.get("FRAMES_OUT")
        if not out:
            return
        with open(out, "w") as frames:
            frames.write("# gangrun top, captured from tmux (80x24): a job of 2 nodes on loopback, 2 ranks each\n")
            for what, text in self.frames:
                frames.write(f"\n## {what}\n\n")
                frames.write("\n".join(line.rstrip() for line in text.rstrip("\n").splitlines()) + "\n")


class TopOfOneNode(TopInTmux):
    """A job of one node has no store request for top to write: while top wants it (a file it
    touches every frame), the agent writes its snapshot beside its registry entry every second.
    --json, --once and the live view show every rank; both files go with the job."""

    def test_top_of_a_job_of_one_node_shows_every_rank(self):
        ranks = 3
        runtime = self.path("runtime")
        os.mkdir(runtime, 0o700)
        self.env = harness.clean_env(XDG_RUNTIME_DIR=runtime)
        agent = self.start(["--nproc_per_node", ranks, "--python", TEST_PYTHON, WORKER, self.pid_dir,
                            self.silence, self.end], env=self.env)
        pids = self.wait_pids({0: agent}, world=ranks)
        entry = os.path.join(runtime, "gangrun", str(agent.pid))
        self.assertFalse(os.path.exists(entry + ".status.json"), "a snapshot nobody asked for")

        done = self.top(agent, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        snapshot = json.loads(done.stdout)
        self.assertEqual(len(snapshot["nodes"]), 1, snapshot)
        self.assertEqual({rank["rank"]: rank["pid"] for rank in snapshot["nodes"][0]["ranks"]}, pids, snapshot)
        print(f"\ntop --json read the node's file in {snapshot['read_seconds'] * 1000:.1f} ms")
        self.assertEqual(os.stat(entry + ".status.json").st_mode & 0o777, 0o600)

        once = self.top(agent, "--once")
        self.assertEqual(once.returncode, 0, once.stderr)
        self.assertNotIn("\x1b", once.stdout)
        self.assertNotIn("q quits", once.stdout, "--once reads no key")
        self.assertIn("1 node, 3 ranks", once.stdout)
        rows = self.rows(once.stdout)
        self.assertEqual(sorted(rows), list(range(ranks)), once.stdout)
        for rank, pid in pids.items():
            self.assertIn(f" {pid} ", rows[rank], once.stdout)

        self.start_pane("live", f"XDG_RUNTIME_DIR={runtime} {harness.GANGRUN} top --pid {agent.pid}")
        frame = self.wait_pane(lambda text: len(self.rows(text)) == ranks, "a frame with every rank")
        self.assertIn("(q quits)", frame)
        self.tmux("send-keys", "q")
        after = self.wait_pane(lambda text: "top exited" in text and "baud" in text, "top to exit after q")
        self.assertIn("top exited 0", after)

        with open(self.end, "w"):
            pass
        result = self.finish(agent)
        self.assertEqual(result.returncode, 0, result.describe())
        for gone in (".json", ".status.json", ".wanted"):
            self.assertFalse(os.path.exists(entry + gone), f"{entry + gone} outlived its job")


if __name__ == "__main__":
    unittest.main()
