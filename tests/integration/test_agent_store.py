"""gangrun hosts the store its workers meet through (TORCHELASTIC_USE_AGENT_STORE=True),
as torchrun's agent does: real PyTorch (gloo) workers join through it, it outlives rank 0,
and a restart attempt starts with an empty store (issue: TCP store, must show 2)."""

import os
import resource
import subprocess

import harness
from harness import GangrunTestCase, TEST_PYTHON

WORKER = os.path.join(harness.HERE, "torch_agent_store_worker.py")


class AgentStore(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()

    def launch(self, mode, *options, timeout=240):
        out = self.path("out")
        os.makedirs(out, exist_ok=True)
        result = self.gangrun(["--nproc_per_node", 4, *options, "--python", TEST_PYTHON, WORKER, mode, out,
                               self.pid_dir], timeout=timeout)
        return result, out

    def test_ddp_workers_meet_through_gangruns_store_which_outlives_rank_0(self):
        result, out = self.launch("outlive")
        self.assertExit(result, 0)
        counts = []
        for rank in range(4):
            seen = self.read_json(os.path.join(out, f"outlive.0.{rank}.json"))
            self.assertEqual(seen["use_agent_store"], "True")
            self.assertEqual(seen["all_reduce"], seen["expected_sum"])
            if rank > 0:
                self.assertEqual(seen["get_after_rank0_left"], "alive")
                counts.append(seen["add_after_rank0_left"])
        self.assertEqual(sorted(counts), [1, 2, 3])

    def test_a_restart_attempt_initialises_cleanly_with_an_empty_store(self):
        result, out = self.launch("restart", "--max_restarts", 1)
        self.assertExit(result, 0)
        self.assertIn("restarting", result.stderr)
        for rank in range(4):
            first = self.read_json(os.path.join(out, f"restart.0.{rank}.json"))
            second = self.read_json(os.path.join(out, f"restart.1.{rank}.json"))
            self.assertEqual(first["all_reduce"], first["expected_sum"])
            self.assertEqual(second["all_reduce"], second["expected_sum"])
            self.assertEqual(second["master"], first["master"], "the store keeps its address between attempts")
            self.assertLessEqual(first["marker_count"], 4)
            self.assertLessEqual(second["marker_count"], 4, f"rank {rank} saw keys of attempt 0 in attempt 1")
        counts = sorted(self.read_json(os.path.join(out, f"restart.1.{rank}.json"))["marker_count"]
                        for rank in range(4))
        self.assertEqual(counts, [1, 2, 3, 4])

    def test_a_fixed_master_port_is_where_the_store_listens(self):
        port = harness.free_port()
        result, out = self.launch("outlive", "--master_addr", "127.0.0.1", "--master_port", port)
        self.assertExit(result, 0)
        seen = self.read_json(os.path.join(out, "outlive.0.1.json"))
        self.assertEqual(seen["master"], f"127.0.0.1:{port}")


class AgentStoreLimits(GangrunTestCase):
    def test_workers_keep_the_users_open_file_limit(self):
        # The standalone server raises its own limit to hold many clients; the
        # agent store must not, because workers inherit gangrun's limits.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = min(512, soft if soft != resource.RLIM_INFINITY else 512)
        if hard != resource.RLIM_INFINITY and hard <= wanted:
            self.skipTest(f"the hard open-file limit {hard} leaves nothing to compare")
        out = self.path("limit")
        argv = [harness.GANGRUN, "--nproc_per_node", "2", "--no_python", "bash", "-c",
                f'ulimit -Sn > {out}.$RANK']
        result = subprocess.run(argv, capture_output=True, timeout=60, env=harness.clean_env(),
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard)))
        self.assertEqual(result.returncode, 0, result.stderr.decode(errors="replace"))
        for rank in (0, 1):
            with open(f"{out}.{rank}") as f:
                self.assertEqual(f.read().strip(), str(wanted))


if __name__ == "__main__":
    harness.main()
