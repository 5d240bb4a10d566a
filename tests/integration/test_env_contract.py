"""The worker environment contract (docs/environment.md, "What each worker gets"), observed by fake workers.
The same contract under real PyTorch DDP is test_torch_ddp.py."""

import os

import harness
import static_nodes
from harness import GangrunTestCase, check_worker_env, expected_worker_env


class EnvContract(GangrunTestCase):
    def run_and_collect(self, nproc, options=(), env=None):
        env = harness.clean_env() if env is None else env
        result = self.gangrun(["--nproc_per_node", nproc, *options,
                               *self.fake("--print-env", self.path("env.{rank}.json"))], env=env)
        self.assertExit(result, 0)
        self.last_result = result
        return [self.read_json(self.path(f"env.{rank}.json")) for rank in range(nproc)], env

    def test_every_variable_in_every_worker(self):
        env = harness.clean_env(GANGRUN_TEST_INHERITED="kept value, with = and spaces",
                                GANGRUN_TEST_MULTILINE="line one\nline two\t\u00fc", GANGRUN_TEST_EMPTY="")
        infos, _ = self.run_and_collect(4, env=env)
        ports, error_files = set(), set()
        for rank, info in enumerate(infos):
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=4, launcher_env=env)
            check_worker_env(self, info["env"], env, expected, f"rank {rank}")
            self.assertTrue(info["error_file_dir_exists"], f"rank {rank}: the directory of TORCHELASTIC_ERROR_FILE does not exist")
            self.assertEqual(info["argv"], self.fake("--print-env", self.path("env.{rank}.json")))
            self.assertEqual(os.path.realpath(info["cwd"]), os.path.realpath(self.tmp), "workers inherit the cwd")
            ports.add(info["env"]["MASTER_PORT"])
            error_files.add(info["env"]["TORCHELASTIC_ERROR_FILE"])
        self.assertEqual(len(ports), 1, f"workers disagree on MASTER_PORT: {ports}")
        self.assertEqual(len(error_files), 4, "every worker needs its own TORCHELASTIC_ERROR_FILE")
        self.assertEqual(self.last_result.stderr.count("OMP_NUM_THREADS"), 1,
                         "setting OMP_NUM_THREADS=1 should be said once" + self.last_result.describe())

    def test_values_follow_the_options(self):
        port = harness.free_port()
        options = ["--role", "trainer", "--rdzv_id", "job-17", "--max_restarts", 2,
                   "--master_addr", "127.0.0.1", "--master_port", port]
        infos, env = self.run_and_collect(2, options)
        for rank, info in enumerate(infos):
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=2, max_restarts=2,
                                           run_id="job-17", role="trainer", master_port=port, launcher_env=env)
            check_worker_env(self, info["env"], env, expected, f"rank {rank}")

    def test_dash_spellings(self):
        infos, env = self.run_and_collect(2, ["--max-restarts", 1, "--rdzv-id", "dashes"])
        for rank, info in enumerate(infos):
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=2, max_restarts=1,
                                           run_id="dashes", launcher_env=env)
            check_worker_env(self, info["env"], env, expected, f"rank {rank}")

    def test_variables_set_in_gangrun_env_are_kept(self):
        env = harness.clean_env(TORCH_NCCL_ASYNC_ERROR_HANDLING="3", NCCL_ASYNC_ERROR_HANDLING="0", OMP_NUM_THREADS="7")
        infos, _ = self.run_and_collect(2, env=env)
        for rank, info in enumerate(infos):
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=2, launcher_env=env)
            self.assertEqual(expected["OMP_NUM_THREADS"], "7")
            check_worker_env(self, info["env"], env, expected, f"rank {rank}")

    def test_single_worker_gets_no_omp_num_threads(self):
        infos, env = self.run_and_collect(1)
        expected = expected_worker_env(rank=0, local_rank=0, nproc_per_node=1, launcher_env=env)
        self.assertNotIn("OMP_NUM_THREADS", expected)
        check_worker_env(self, infos[0]["env"], env, expected, "rank 0")

    def test_stale_rank_variables_in_gangrun_env_are_replaced(self):
        env = harness.clean_env(RANK="99", LOCAL_RANK="42", WORLD_SIZE="99", GROUP_RANK="7", ROLE_NAME="stale")
        infos, _ = self.run_and_collect(2, env=env)
        for rank, info in enumerate(infos):
            expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=2, launcher_env=env)
            check_worker_env(self, info["env"], env, expected, f"rank {rank}")

    def test_restart_count_in_env(self):
        result = self.gangrun(["--nproc_per_node", 2, "--max_restarts", 1, "--term-timeout", 2, *self.fake(
            "--print-env", self.path("env.{rank}.{restart}.json"),
            "--only-rank", 0, "--wait-file", self.path("env.1.{restart}.json"), 300,
            "--only-rank", 0, "--restart-fail-until", 1,
            # rank 1 of the first attempt runs until the restart stops it
            "--if-restart-below", 1, "--sleep", 600)])
        self.assertExit(result, 0)
        env = harness.clean_env()
        for restart in (0, 1):
            for rank in (0, 1):
                info = self.read_json(self.path(f"env.{rank}.{restart}.json"))
                expected = expected_worker_env(rank=rank, local_rank=rank, nproc_per_node=2, restart=restart,
                                               max_restarts=1, launcher_env=env)
                check_worker_env(self, info["env"], env, expected, f"rank {rank} attempt {restart}")


class StaticMultiNode(GangrunTestCase):
    def test_second_node_gets_ranks_2_and_3(self):
        job = static_nodes.StaticJob(self, 2)  # on loopback
        workers = self.dry_run([*job.args(1), "--nproc_per_node", 2,
                                *self.fake("--print-env", self.path("env.{rank}.json"))])
        self.assertEqual([(w["rank"], w["local_rank"]) for w in workers], [(2, 0), (3, 1)])
        for worker in workers:
            expected = expected_worker_env(rank=worker["rank"], local_rank=worker["local_rank"], node_rank=1, nnodes=2,
                                           nproc_per_node=2, master_port=job.master_port, launcher_env=harness.clean_env())
            for name, value in expected.items():
                self.assertEqual(worker["env"].get(name), value, f"rank {worker['rank']}: {name}")
        self.assert_nothing_started()


if __name__ == "__main__":
    harness.main()
