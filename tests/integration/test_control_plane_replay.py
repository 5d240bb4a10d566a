"""Replays and stray writes against the multi-node control plane.

What a stranger who can reach a job's store can read there (anyone can GET or list its
keys) and write back, byte for byte, into another job's store, and what one write to the
gang doctor's keys could do before they became the coordinator's to number. Each test runs
real 2-node jobs (two gangrun agents on loopback, fake workers), as test_control_plane.py
starts them, and checks that the job's outcome is its own and every node ran its share.
"""

import json
import os
import socket

import harness
import store_wire
from harness import EVENT_TIMEOUT
from test_control_plane import LOOPBACK, RDZV, ControlPlaneCase, message_of, wait_get

DOCTOR = "gangrun/run/doctor/"


class StrangerCase(ControlPlaneCase):
    def ready_file_of(self, job):
        return self.path(f"{job}-ready.{{rank}}")

    def job_worker(self, job):
        return [harness.FAKE, "--touch", self.ready_file_of(job), "--wait-file", self.path(f"{job}-go"), 300]

    def wait_ready_files(self, job, ranks):
        harness.wait_for(lambda: all(
            os.path.exists(self.ready_file_of(job).format(rank=rank)) for rank in ranks),
            EVENT_TIMEOUT, f"job {job}'s workers {ranks} to start")

    def listening(self):
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=EVENT_TIMEOUT):
                return True
        except ConnectionRefusedError:
            return False

    def read_keys(self, keys):
        with self.stranger() as wire:
            return {key: wait_get(wire, key) for key in keys}


class Replay(StrangerCase):
    def test_a_join_and_heartbeat_of_another_job_with_the_same_secret_take_no_seat(self):
        # Job A, started the documented way: a shared secret, the default run id. While it
        # runs, a stranger reads node 1's join and heartbeat from its store.
        head_a = self.agent(0, self.job_worker("a"))
        node_a = self.agent(1, self.job_worker("a"))
        self.wait_ready_files("a", [0, 1])
        node1 = [m["id"] for m in message_of(self.read_keys([RDZV + "round/0"])[RDZV + "round/0"])["members"]
                 if m["group_rank"] == 1][0]
        stolen = self.read_keys([RDZV + "join/" + node1, RDZV + "alive/" + node1])
        self.release("a-go")
        for proc in (head_a, node_a):
            self.assertExit(self.finish(proc), 0)

        # Job B, the same way: the head first, then the replay, then the real node 1.
        self.port = harness.free_port()
        head_b = self.agent(0, self.job_worker("b"))
        harness.wait_for(self.listening, EVENT_TIMEOUT, "job B's head to listen")
        with self.stranger() as wire:
            for key, value in stolen.items():
                wire.set(key, value)
            wire.num_keys()  # the store has taken the writes
        node_b = self.agent(1, self.job_worker("b"))
        # Node 1's share runs, on the real node 1.
        self.wait_ready_files("b", [0, 1])
        self.release("b-go")
        for proc in (head_b, node_b):
            self.assertExit(self.finish(proc), 0)
        self.assertIn("rendezvous: ignored a message", self.stderr_of(head_b))


class Strangers(StrangerCase):
    def test_a_store_that_is_not_this_jobs_is_named(self):
        with store_wire.ServedStore(self) as squatter:
            self.port = squatter.port
            result = self.finish(self.agent(1, self.worker()))
        self.assertExit(result, 2)
        self.assertIn(f"the store at {LOOPBACK}:{squatter.port} is not a gangrun job's", result.stderr)
        self.assertEqual(self.recorded_pids(), [], "a worker started")

    def test_a_node_with_another_secret_is_told_so_after_a_flood_of_junk_joins(self):
        head = self.agent(0, self.worker())
        harness.wait_for(self.listening, EVENT_TIMEOUT, "the head to listen")
        junk = json.dumps({"id": "x", "host": "x", "address": "x", "node_rank": 1, "local_world_size": 1,
                           "run_id": "none"})
        with self.stranger() as wire:
            for number in range(1001):
                wire.set(f"{RDZV}join/junk{number}", junk)
            wire.num_keys()  # the store has taken them
        other = self.finish(self.agent(1, self.worker(), secret="another-secret-of-this-test-0123"))
        self.assertExit(other, 2)
        self.assertIn("GANGRUN_JOB_SECRET", other.stderr)
        head.send_signal(15)
        self.assertNotEqual(self.finish(head).returncode, 0)


class Seats(StrangerCase):
    def test_a_node_whose_seat_a_stranger_holds_is_told_and_does_not_exit_0(self):
        # Without a secret anyone may take a free seat: here node 1's, with a result of success.
        # Heartbeats slow enough that the fake, which sends none, keeps its seat meanwhile.
        slow = ("--rdzv_conf", "keep_alive_interval=10,keep_alive_max_attempt=6")
        head = self.agent(0, self.worker(), secret=None, extra=slow)
        harness.wait_for(self.listening, EVENT_TIMEOUT, "the head to listen")
        fake = {"id": "fake1", "host": "fakehost", "address": "fakehost", "node_rank": 1,
                "local_world_size": 1, "run_id": "none"}
        with self.stranger() as wire:
            wire.set(RDZV + "join/fake1", json.dumps(fake))
            wait_get(wire, RDZV + "round/0")
            wire.set(RDZV + "result/0/fake1", json.dumps({
                "agent": "fake1", "host": "fakehost", "succeeded": True, "rank": None, "exit_code": 0,
                "what": "", "stop_signal": None, "stopped_for_round_end": False, "stopped_for_hang": False,
                "ended": []}))
            wait_get(wire, RDZV + "round/1")  # the job's outcome, while the fake still holds its seat
            real = self.finish(self.agent(1, self.worker(), secret=None, extra=slow))
        # The real node 1 ran nothing and says why; the head's console names both.
        self.assertExit(real, 2)
        self.assertIn("two agents claim node rank 1: the agent on fakehost holds it", real.stderr)
        head_result = self.finish(head)
        self.assertIn("two agents claim node rank 1", head_result.stderr)
        self.assertEqual(len(self.recorded_pids()), 1, "node 1's worker ran after all")


class DoctorKeys(ControlPlaneCase):
    def test_one_write_to_the_doctors_keys_stops_nothing_without_a_secret(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("go"), 300), secret=None,
                                     extra=("--hang-timeout", 60))
        workers = self.recorded_pids()
        # The request numbers are the coordinator's: a stranger's write is refused.
        for key in (DOCTOR + "request/0/1", DOCTOR + "requests/0", DOCTOR + "asked/x"):
            with self.stranger() as wire:
                wire.set(key, json.dumps({"why": "hang", "silent_for_s": 999, "ask": "x"}))
                self.assertTrue(wire.closed_within(EVENT_TIMEOUT), f"the store kept a writer of {key}")
        # An ask is taken without a secret, yet only makes every node read and answer.
        with self.stranger() as wire:
            wire.set(DOCTOR + "ask/0/x", json.dumps({"why": "hang", "silent_for_s": 999, "ask": "x"}))
            number = int(wait_get(wire, DOCTOR + "asked/x"))
            for agent in self.members():
                wait_get(wire, f"{DOCTOR}answer/0/{number}/{agent}")
        self.assertIsNone(head.poll())
        self.assertIsNone(other.poll())
        self.assertFalse(any(harness.is_dead(pid) for pid in workers), "a worker was stopped")
        self.release()
        for proc in (head, other):
            result = self.finish(proc)
            self.assertExit(result, 0)
            self.assertNotIn("--on-hang stop", result.stderr)

    def test_a_stranger_cannot_blind_the_doctor_and_a_real_hang_still_stops_the_job(self):
        head, other = self.two_nodes(self.worker("--wait-file", self.path("never"), 300),
                                     extra=("--hang-timeout", 3, "--on-hang", "stop"))
        with self.stranger() as wire:
            wire.op("ADD", store_wire.blob(DOCTOR + "requests/0") + store_wire.i64(5))
            self.assertTrue(wire.closed_within(EVENT_TIMEOUT), "the store let a stranger shift the requests")
        for proc in (head, other):
            self.assertExit(self.finish(proc), 5)
        self.assertIn("--on-hang stop", self.stderr_of(head))


if __name__ == "__main__":
    harness.main()
