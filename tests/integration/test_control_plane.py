"""The multi-node control plane against a stranger who can reach the store's port.

Each test runs a real 2-node job (two gangrun agents on loopback, fake workers) and
attacks it the way anyone on the cluster network, or any local user, could: forged
round ends, rounds, outcomes and node reports written to the head's store, fake joins
with and without the job's secret, fields out of range, a frozen agent (SIGSTOP) on
either side, and a look at where the head listens. Each checks that the job is not
steered (its exit code is its own), that the forger is refused or ignored, and that
nothing is left running. The job's secret never shows in a dry run, a log or a report.
"""

import json
import os
import resource
import signal
import socket
import subprocess

import harness
import static_nodes
import store_wire
from harness import EVENT_TIMEOUT

LOOPBACK = "127.0.0.1"
SECRET = harness.TEST_JOB_SECRET
RDZV = "gangrun/run/rdzv/"
# A frozen agent is declared lost after interval x attempts (here 2 s); the tests that
# freeze one use it, the others keep the defaults.
FAST_HEARTBEATS = ("--rdzv_conf", "keep_alive_interval=0.5,keep_alive_max_attempt=4")


def wait_get(wire, key):
    """KEY's value once it exists (a GET of a missing key answers at once)."""
    wire.op("WAIT", store_wire.u64(1) + store_wire.blob(key))
    assert wire.u8(timeout=EVENT_TIMEOUT) == store_wire.STOP_WAITING
    return wire.get(key)


def message_of(value):
    """The JSON a stored control message carries, with or without its MAC."""
    text = value.decode()
    return json.loads(text[65:] if text[64:65] == ":" else text)


class ControlPlaneCase(harness.GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.port = harness.free_port()
        self._job = None

    def tearDown(self):
        running = [proc for proc in self._started if proc.poll() is None]
        for proc in running:
            os.killpg(proc.pid, signal.SIGKILL)
            os.killpg(proc.pid, signal.SIGCONT)
        super().tearDown()
        if running:
            self.fail(f"agents still running at the end of the test (killed now): {[p.pid for p in running]}")

    @property
    def job(self):
        """The static job of two nodes on loopback at self.port, which a test may change
        between jobs: a new port is a new job."""
        if self._job is None or self._job.master_port != self.port:
            self._job = static_nodes.StaticJob(self, 2, master_port=self.port)
        return self._job

    def env(self, secret=SECRET):
        return harness.clean_env(GANGRUN_JOB_SECRET=secret) if secret else harness.clean_env()

    def worker(self, *actions):
        """A fake worker that records its pid, says it is ready, then does ACTIONS."""
        return [harness.FAKE, "--pid-dir", self.pid_dir, "--touch", self.path("ready.{rank}"), *actions]

    def agent(self, node_rank, worker, secret=SECRET, extra=()):
        return self.job.start(node_rank, ["--nproc_per_node", 1, *extra, *worker], env=self.env(secret))

    def two_nodes(self, worker, secret=SECRET, extra=()):
        head = self.agent(0, worker, secret, extra)
        other = self.agent(1, worker, secret, extra)
        self.wait_ready(2)
        return head, other

    def stranger(self):
        return store_wire.Validated(self.port)

    def members(self):
        """The agent ids of round 0, as anyone can read them."""
        with self.stranger() as wire:
            return [m["id"] for m in message_of(wait_get(wire, RDZV + "round/0"))["members"]]

    def release(self, name="go"):
        with open(self.path(name), "w"):
            pass


class ForgedMessages(ControlPlaneCase):
    def test_forged_ends_rounds_and_outcomes_are_refused_and_the_job_is_its_own(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300, "--only-rank", 1,
                                                 "--exit", 7))
        forged = {
            RDZV + "end/0": {"reason": "success", "message": "forged"},
            RDZV + "round/1": {"kind": "done", "exit_code": 0, "message": "", "root_agent": "",
                               "stop_signal": None},
            RDZV + "round/2": {"kind": "done", "exit_code": 147, "message": "x", "root_agent": "a",
                               "stop_signal": 19},
            # What every node waits for, and each node's own place in a round.
            RDZV + "round/1/brief": {"kind": "done", "exit_code": 0, "message": "", "root_agent": "",
                                     "stop_signal": None},
            RDZV + "round/1/node/x": {"kind": "assignment", "round": 1},
            RDZV + "latest": 1,
            RDZV + "welcome/x": "",
        }
        for key, value in forged.items():
            with self.stranger() as wire:
                wire.set(key, json.dumps(value))
                self.assertTrue(wire.closed_within(EVENT_TIMEOUT), f"the store kept a forger of {key}")
        # The workers still run: nobody stopped them.
        self.assertEqual(len(self.recorded_pids()), 2)
        self.assertIsNone(head.poll())
        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 7)
        self.assertIn("refused a write of gangrun/run/rdzv/end/0", self.stderr_of(head))

    def test_reports_in_an_agents_name_from_another_connection_are_ignored(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300, "--only-rank", 0,
                                                 "--exit", 7))
        for agent in self.members():
            report = {"agent": agent, "host": "x", "succeeded": False, "rank": 1, "exit_code": 9,
                      "what": "forged", "stop_signal": None, "stopped_for_round_end": False}
            with self.stranger() as wire:
                wire.set(f"{RDZV}failed/0/{agent}", json.dumps(report))
                wire.set(f"{RDZV}result/0/{agent}", json.dumps({**report, "succeeded": True, "exit_code": 0}))
                self.assertEqual(wire.num_keys(), wire.num_keys())  # both writes were served
        self.assertIsNone(head.poll())
        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 7)


class Joins(ControlPlaneCase):
    def test_a_fake_join_without_the_secret_is_turned_away(self):
        worker = self.worker("--wait-file", self.path("go"), 300)
        head = self.agent(0, worker)
        self.wait_stderr(head, "rendezvous: the agent on")  # the head's own join is in
        fake = {"id": "evil-1-0", "host": "evil", "address": "evil", "node_rank": 1, "local_world_size": 64,
                "run_id": "none"}
        with self.stranger() as wire:
            wire.set(RDZV + "join/evil-1-0", json.dumps(fake))
            refusal = wait_get(wire, RDZV + "welcome/evil-1-0").decode()
        self.assertIn("GANGRUN_JOB_SECRET", refusal)
        other = self.agent(1, worker)
        self.wait_ready(2)
        with self.stranger() as wire:
            self.assertNotIn("evil-1-0", [m["id"] for m in message_of(wait_get(wire, RDZV + "round/0"))["members"]])
        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 0)

    def test_fields_out_of_range_are_ignored_without_a_secret_too(self):
        worker = self.worker("--wait-file", self.path("go"), 300)
        head = self.agent(0, worker, secret=None)
        self.wait_stderr(head, "rendezvous: the agent on")
        attacks = {"big-0": '{"node_rank": 99999999999999999999, "local_world_size": 1}',
                   "neg-0": '{"node_rank": 1, "local_world_size": -2147483648}',
                   "flt-0": '{"node_rank": 1.5, "local_world_size": 1}'}
        for agent, fields in attacks.items():
            join = json.loads(fields.replace("99999999999999999999", '"BIG"'))
            join.update({"id": agent, "host": agent, "address": agent, "run_id": "none"})
            text = json.dumps(join).replace('"BIG"', "99999999999999999999")
            with self.stranger() as wire:
                wire.set(RDZV + "join/" + agent, text)
                self.assertEqual(wire.num_keys(), wire.num_keys())
        other = self.agent(1, worker, secret=None)
        self.wait_ready(2)
        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 0)
        err = self.stderr_of(head)
        self.assertIn("ignored a message", err)
        # 99999999999999999999 is past every integer JSON has: a float, as 1.5 is.
        self.assertEqual(err.count('"node_rank" is not an integer'), 2, err)
        self.assertIn('"local_world_size" is out of range', err)
        # Without a secret each agent says once how to close the control plane.
        for proc in (head, other):
            self.assertEqual(self.stderr_of(proc).count("the rendezvous is not authenticated"), 1)

    def test_c10d_a_stranger_cannot_join_a_job_with_a_secret(self):
        head = self.start(["--rdzv_backend", "c10d", "--rdzv_endpoint", f"{LOOPBACK}:{self.port}", "--nnodes", "1:2",
                           "--rdzv_conf", "last_call_timeout=1", "--nproc_per_node", 1,
                           *self.worker("--print-env", self.path("env.{rank}.json"), "--wait-file",
                                        self.path("go"), 300)],
                          env=self.env())
        self.wait_stderr(head, "rendezvous: the agent on")
        fake = {"id": "aaa-evil-1-0", "host": "aaa-evil", "address": "aaa-evil", "node_rank": -1,
                "local_world_size": 1, "run_id": "none"}
        with self.stranger() as wire:
            wire.set(RDZV + "join/aaa-evil-1-0", json.dumps(fake))
            self.assertIn("GANGRUN_JOB_SECRET", wait_get(wire, RDZV + "welcome/aaa-evil-1-0").decode())
        self.wait_ready(1)
        self.release()
        self.assertExit(self.finish(head), 0)
        env = self.read_json(self.path("env.0.json"))["env"]
        self.assertEqual((env["RANK"], env["WORLD_SIZE"]), ("0", "1"))


class FrozenAgents(ControlPlaneCase):
    def test_a_stopped_agent_is_declared_lost_and_stops_its_workers_when_it_wakes(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("never"), 300), extra=FAST_HEARTBEATS)
        workers = self.recorded_pids()
        os.kill(other.pid, signal.SIGSTOP)
        try:
            result = self.finish(head)
        finally:
            os.kill(other.pid, signal.SIGCONT)
        self.assertExit(result, 3)
        self.assertIn("no heartbeat for 2 s", result.stderr)
        self.assertRegex(result.stderr, r"lost node 1 \(\S+, 127\.0\.0\.1\): its agent wrote no heartbeat")
        woken = self.finish(other)
        self.assertNotEqual(woken.returncode, 0, woken.describe())
        self.assert_dead(workers, what="workers of the job")

    def test_a_node_whose_worker_died_reports_it_when_the_head_is_frozen(self):
        head, other = self.two_nodes(self.worker("--only-rank", 1, "--wait-file", self.path("go"), 300,
                                                 "--only-rank", 1, "--exit", 9,
                                                 "--wait-file", self.path("never"), 300), extra=FAST_HEARTBEATS)
        workers = self.recorded_pids()
        os.kill(head.pid, signal.SIGSTOP)
        try:
            self.release()
            result = self.finish(other)
        finally:
            os.kill(head.pid, signal.SIGCONT)
        self.assertExit(result, 9)
        self.assertIn("did not take this agent's heartbeat", result.stderr)
        self.finish(head)
        self.assert_dead(workers, what="workers of the job")


class ConnectionStorm(ControlPlaneCase):
    # 9 loopback addresses x 1900: more than the store's 16 Ki connections (so newcomers
    # take others' places) and fewer than the 2048 one address may hold.
    ADDRESSES = [f"127.0.0.{i}" for i in range(2, 11)]
    PER_ADDRESS = 1900

    def test_a_storm_of_silent_and_waiting_connections_does_not_cut_the_agents_links(self):
        needed = len(self.ADDRESSES) * self.PER_ADDRESS + 200
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < needed:
            self.skipTest(f"needs {needed} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed if soft != resource.RLIM_INFINITY else soft, hard))
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300))
        storm = []
        try:
            for n, address in enumerate(self.ADDRESSES):
                for _ in range(self.PER_ADDRESS):
                    sock = socket.create_connection((LOOPBACK, self.port), timeout=EVENT_TIMEOUT,
                                                    source_address=(address, 0))
                    if n == 0:  # these wait for a key that never comes (1.13 dialect)
                        sock.sendall(bytes([store_wire.LEGACY["WAIT"]]) + store_wire.u64(1) +
                                     store_wire.blob("/never"))
                    storm.append(sock)
            # Every connection was accepted (served or reclaimed): a fresh client is served.
            with self.stranger() as wire:
                self.assertEqual(wire.ping(7), 7)
            self.assertIsNone(head.poll(), self.stderr_of(head))
            self.assertIsNone(other.poll(), self.stderr_of(other))
            self.release()
            for result in self.job.finish().values():
                self.assertExit(result, 0)
        finally:
            for sock in storm:
                sock.close()
        # Newcomers took the places of the storm's own connections, never an agent's link.
        self.assertIn("to admit", self.stderr_of(head))
        self.assertNotIn("lost the", self.stderr_of(head))


class Waiting(ControlPlaneCase):
    def test_waiting_agents_say_whom_the_rendezvous_waits_for(self):
        worker = self.worker()

        job = static_nodes.StaticJob(self, 3, master_port=self.port)
        head = job.start(0, ["--nproc_per_node", 1, *worker])
        last = job.start(2, ["--nproc_per_node", 1, *worker])
        # Every 10 s the coordinator logs what it waits for, and the agents that wait read it.
        self.wait_stderr(head, "rendezvous: waiting for node rank 1 to join (2 of 3 joined)")
        self.wait_stderr(last, f"the coordinator at {LOOPBACK}:{self.port} waits for node rank 1 to join "
                               "(2 of 3 joined)")
        job.start(1, ["--nproc_per_node", 1, *worker])  # the middle node
        for result in job.finish().values():
            self.assertExit(result, 0)


class Listening(ControlPlaneCase):
    def test_the_head_listens_on_the_master_address_alone(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300))
        listeners = subprocess.run(["ss", "-Hltn", f"sport = :{self.port}"], capture_output=True, text=True,
                                   timeout=30, check=True).stdout.split()
        local = [word for word in listeners if word.endswith(f":{self.port}")]
        self.assertTrue(local, listeners)
        self.assertEqual(set(local), {f"{LOOPBACK}:{self.port}"}, listeners)
        self.assertIn(f"listening on {LOOPBACK}:{self.port}", self.stderr_of(head))
        self.release()
        for result in self.job.finish().values():
            self.assertExit(result, 0)

    def listeners(self):
        shown = subprocess.run(["ss", "-Hltn", f"sport = :{self.port}"], capture_output=True, text=True,
                               timeout=30, check=True).stdout.split()
        return {word for word in shown if word.endswith(f":{self.port}")}

    def test_local_addr_chooses_the_one_address_the_head_listens_on(self):
        # This host's own name, resolving to loopback only (as Debian maps it to 127.0.1.1),
        # makes the head listen everywhere so that other hosts reach it; --local_addr
        # chooses one address instead.
        host = socket.gethostname()
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
        if not addresses or not all(a.startswith("127.") or a == "::1" for a in addresses):
            self.skipTest(f"{host} resolves to {sorted(addresses)}, not to loopback alone")
        for local_addr, expected in ((None, "every interface"), (LOOPBACK, f"{LOOPBACK}:{self.port}")):
            with self.subTest(local_addr=local_addr):
                go = self.path(f"go.{local_addr}")
                worker = self.worker("--wait-file", go, 300)
                extra = ["--local_addr", local_addr] if local_addr else []
                job = static_nodes.StaticJob(self, 2, master_addr=host, master_port=self.port)
                nodes = job.start_all(lambda rank: ["--nproc_per_node", 1, *(extra if rank == 0 else []), *worker])
                self.wait_stderr(nodes[1], "round 0:")
                listening = self.listeners()
                if local_addr:
                    self.assertEqual(listening, {expected})
                else:
                    self.assertTrue(listening <= {f"*:{self.port}", f"[::]:{self.port}", f"0.0.0.0:{self.port}"}
                                    and listening, listening)
                    self.assertIn("resolves only to loopback addresses here", self.stderr_of(nodes[0]))
                self.release(os.path.basename(go))
                for result in job.finish().values():
                    self.assertExit(result, 0)


class Secrets(ControlPlaneCase):
    def test_the_secret_is_in_no_dry_run_log_report_or_worker_environment(self):
        report = self.path("report.json")
        logs = self.path("logs")
        worker = self.worker("--print-env", self.path("env.{rank}.json"))
        extra = ("--report", report, "--log_dir", logs)
        head = self.agent(0, worker, extra=extra)
        other = self.agent(1, worker, extra=extra)
        for result in self.job.finish().values():
            self.assertExit(result, 0)
        dry = self.gangrun(["--dry-run", "--json", *self.job.args(0), *worker], env=self.env())
        self.assertExit(dry, 0)
        texts = [dry.stdout, dry.stderr, self.stderr_of(head), self.stderr_of(other)]
        for root, _, names in os.walk(self.tmp):
            for name in names:
                with open(os.path.join(root, name), errors="replace") as f:
                    texts.append(f.read())
        self.assertTrue(any("GANGRUN_JOB_SECRET" not in t for t in texts))
        for text in texts:
            self.assertNotIn(SECRET, text)
        for rank in (0, 1):
            self.assertNotIn("GANGRUN_JOB_SECRET", self.read_json(self.path(f"env.{rank}.json"))["env"])

    def test_the_agent_erases_the_secret_from_its_own_environment(self):
        # Its workers run as the same user, so they may read /proc/<agent>/environ: the agent
        # reads the secret once and overwrites it there. The nodes still authenticate each
        # other with it (a stranger's join is turned away in the tests above).
        worker = ["--python", "/usr/bin/python3", os.path.join(harness.HERE, "ancestor_environ_worker.py"),
                  self.path("environ.{rank}.json")]
        head = self.agent(0, worker)
        other = self.agent(1, worker)
        for result in self.job.finish().values():
            self.assertExit(result, 0)
        for rank, agent in ((0, head), (1, other)):
            seen = self.read_json(self.path(f"environ.{rank}.json"))
            self.assertIn(str(agent.pid), seen["ancestors"], f"rank {rank}'s agent is not among its ancestors")
            agent_env = seen["ancestors"][str(agent.pid)]
            self.assertIn("GANGRUN_JOB_SECRET=", agent_env, "the variable's name stays, its value is gone")
            self.assertNotIn(f"GANGRUN_JOB_SECRET={SECRET}", agent_env)
            for pid, entries in seen["ancestors"].items():
                self.assertFalse([entry for entry in entries if SECRET in entry],
                                 f"rank {rank}'s ancestor {pid} shows the secret in its environment")
            self.assertNotIn("GANGRUN_JOB_SECRET", seen["env"])
            self.assertFalse([value for value in seen["env"].values() if SECRET in value])

    def test_a_short_secret_or_two_sources_are_usage_errors(self):
        worker = self.worker()
        args = [*self.job.args(0), *worker]
        short = self.gangrun(args, env=self.env("short"))
        self.assertExit(short, 2)
        self.assertIn("fewer than 16 characters", short.stderr)
        both = self.gangrun(args, env=harness.clean_env(GANGRUN_JOB_SECRET=SECRET,
                                                        GANGRUN_JOB_SECRET_FILE=self.path("x")))
        self.assertExit(both, 2)
        self.assertIn("unset one of them", both.stderr)
        self.assert_nothing_started()

    def test_a_secret_file_others_may_read_or_a_blank_or_split_secret_are_usage_errors(self):
        worker = self.worker()
        args = [*self.job.args(0), *worker]
        path = self.path("secret")
        with open(path, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(path, 0o640)
        shared = self.gangrun(args, env=harness.clean_env(GANGRUN_JOB_SECRET_FILE=path))
        self.assertExit(shared, 2)
        self.assertIn(f"GANGRUN_JOB_SECRET_FILE={path}: the job secret file has mode 0640", shared.stderr)
        self.assertIn(f"chmod 600 {path}", shared.stderr)
        for text, words in ((" " * 17, "empty or only white space"), (SECRET + "\n" + SECRET, "more than one line")):
            for env in (harness.clean_env(GANGRUN_JOB_SECRET=text), None):
                if env is None:
                    with open(path, "w") as f:
                        f.write(text + "\n")
                    os.chmod(path, 0o600)
                    env = harness.clean_env(GANGRUN_JOB_SECRET_FILE=path)
                result = self.gangrun(args, env=env)
                self.assertExit(result, 2)
                self.assertIn(words, result.stderr)
                self.assertNotIn(SECRET, result.stderr)
        self.assert_nothing_started()


if __name__ == "__main__":
    harness.main()
