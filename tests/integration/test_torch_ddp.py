"""Real PyTorch (GANGRUN_TEST_PYTHON: Debian's torch 1.13, or 2.x as integration.*.torch2):
4 CPU workers, gloo, DDP. Every worker's environment is checked against the contract
(docs/environment.md, "What each worker gets")."""

import os

import harness
from harness import GangrunTestCase, TEST_PYTHON, check_worker_env, expected_worker_env

SCRIPT = os.path.join(harness.HERE, "torch_ddp_worker.py")


class TorchDdp(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()
        self.out = self.path("out")
        os.mkdir(self.out)

    def check_run(self, result, nproc, launcher_env):
        self.assertExit(result, 0)
        for rank in range(nproc):
            info = self.read_json(os.path.join(self.out, f"env.{rank}.json"))
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=nproc, launcher_env=launcher_env)
            check_worker_env(self, info["env"], launcher_env, expected, f"torch rank {rank}")
            self.assertEqual(os.path.realpath(info["executable"]), os.path.realpath(TEST_PYTHON))
            self.assertEqual(info["cmdline"], [TEST_PYTHON, "-u", SCRIPT, self.out, self.pid_dir])
            outcome = self.read_json(os.path.join(self.out, f"result.{rank}.json"))
            self.assertEqual(outcome["world_size"], nproc)
            self.assertEqual(outcome["all_reduce"], outcome["expected_sum"])
            self.assertTrue(outcome["ddp_grads_in_sync"])

    def test_four_workers_gloo_with_python_option(self):
        env = harness.clean_env(GANGRUN_TEST_INHERITED="from the launcher")
        result = self.gangrun(["--nproc_per_node", 4, "--python", TEST_PYTHON, SCRIPT, self.out, self.pid_dir],
                              env=env, timeout=150)
        self.check_run(result, 4, env)

    def test_two_workers_with_python_exec(self):
        env = harness.clean_env(PYTHON_EXEC=TEST_PYTHON)
        result = self.gangrun(["--nproc-per-node", 2, SCRIPT, self.out, self.pid_dir], env=env, timeout=120)
        self.check_run(result, 2, env)


if __name__ == "__main__":
    harness.main()
