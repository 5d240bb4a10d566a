"""Where option values come from (docs/flags.md, the section of that name): command line >
GANGRUN_<OPTION> > PET_<OPTION> > --config FILE > defaults; and the three process-count
spellings. Observed through --dry-run --json (schema in harness.py)."""

import json
import os

import harness
from harness import GangrunTestCase


class Layering(GangrunTestCase):
    def world_size(self, options=(), **env_extra):
        workers = self.dry_run([*options, *self.fake("--exit", 0)], env=harness.clean_env(**env_extra))
        sizes = {w["env"]["WORLD_SIZE"] for w in workers}
        self.assertEqual(sizes, {str(len(workers))}, "WORLD_SIZE should match the workers planned")
        return len(workers)

    def config(self, values, name="config.json"):
        path = self.path(name)
        with open(path, "w") as f:
            json.dump(values, f)
        return path

    def test_default_is_one_worker(self):
        self.assertEqual(self.world_size(), 1)

    def test_gangrun_env(self):
        self.assertEqual(self.world_size(GANGRUN_NPROC_PER_NODE="3"), 3)

    def test_pet_env(self):
        self.assertEqual(self.world_size(PET_NPROC_PER_NODE="2"), 2)

    def test_gangrun_env_beats_pet_env(self):
        self.assertEqual(self.world_size(GANGRUN_NPROC_PER_NODE="3", PET_NPROC_PER_NODE="2"), 3)

    def test_command_line_beats_both(self):
        self.assertEqual(self.world_size(["--nproc_per_node", 4], GANGRUN_NPROC_PER_NODE="3", PET_NPROC_PER_NODE="2"), 4)

    def test_config_file(self):
        self.assertEqual(self.world_size(["--config", self.config({"nproc_per_node": 5})]), 5)

    def test_pet_env_beats_config_file(self):
        self.assertEqual(self.world_size(["--config", self.config({"nproc_per_node": 5})], PET_NPROC_PER_NODE="2"), 2)

    def test_command_line_beats_config_file(self):
        self.assertEqual(self.world_size(["--config", self.config({"nproc_per_node": 5}), "--nproc_per_node", 2]), 2)

    def test_config_named_by_environment(self):
        self.assertEqual(self.world_size(GANGRUN_CONFIG=self.config({"nproc_per_node": 3})), 3)

    def test_other_options_layer_too(self):
        port = harness.free_port()
        path = self.config({"rdzv_id": "from-config", "max_restarts": 4, "master_port": port})
        env = harness.clean_env(GANGRUN_RDZV_ID="from-gangrun-env", PET_RDZV_ID="from-pet-env", PET_MAX_RESTARTS="2")
        workers = self.dry_run(["--config", path, "--nproc_per_node", 2, *self.fake("--exit", 0)], env=env)
        for w in workers:
            self.assertEqual(w["env"]["TORCHELASTIC_RUN_ID"], "from-gangrun-env")
            self.assertEqual(w["env"]["TORCHELASTIC_MAX_RESTARTS"], "2")
            self.assertEqual(w["env"]["MASTER_PORT"], str(port))


class Aliases(GangrunTestCase):
    def test_accelerate_and_deepspeed_spellings(self):
        port = harness.free_port()
        workers = self.dry_run(["--num_machines", 2, "--machine_rank", 1, "--main_process_ip", "127.0.0.1",
                                "--main_process_port", port, "--num_processes", 4, *self.fake("--exit", 0)])
        self.assertEqual([w["rank"] for w in workers], [2, 3])
        for w in workers:
            self.assertEqual(w["env"]["GROUP_RANK"], "1")
            self.assertEqual(w["env"]["GROUP_WORLD_SIZE"], "2")
            self.assertEqual(w["env"]["MASTER_ADDR"], "127.0.0.1")
            self.assertEqual(w["env"]["MASTER_PORT"], str(port))
        workers = self.dry_run(["--num_nodes", 1, *self.fake("--exit", 0)])
        self.assertEqual(len(workers), 1)

    def test_torchrun_options_accepted(self):
        workers = self.dry_run(["--nproc_per_node", 2, "--monitor_interval", 5, "--nnodes", "1:1",
                                *self.fake("--exit", 0)])
        self.assertEqual(len(workers), 2)

    def test_static_rdzv_backend_accepted(self):
        # --rdzv_backend takes static or c10d; static is torchrun's default.
        workers = self.dry_run(["--nproc_per_node", 2, "--rdzv_backend", "static", *self.fake("--exit", 0)])
        self.assertEqual(len(workers), 2)


class ProcessCounts(GangrunTestCase):
    def test_num_processes_is_the_total(self):
        for spelling in ("--num_processes", "--num-processes"):
            with self.subTest(spelling=spelling):
                workers = self.dry_run([spelling, 4, *self.fake("--exit", 0)])
                self.assertEqual([w["rank"] for w in workers], [0, 1, 2, 3])
                self.assertEqual({w["env"]["LOCAL_WORLD_SIZE"] for w in workers}, {"4"})

    def test_num_processes_is_divided_by_nnodes(self):
        port = harness.free_port()
        workers = self.dry_run(["--num_processes", 6, "--nnodes", 2, "--node_rank", 1, "--master_addr", "127.0.0.1",
                                "--master_port", port, *self.fake("--exit", 0)])
        self.assertEqual([w["rank"] for w in workers], [3, 4, 5])
        self.assertEqual({w["env"]["WORLD_SIZE"] for w in workers}, {"6"})
        self.assertEqual({w["env"]["LOCAL_WORLD_SIZE"] for w in workers}, {"3"})

    def test_agreeing_counts_are_accepted(self):
        workers = self.dry_run(["--nproc_per_node", 2, "--num_processes", 2, *self.fake("--exit", 0)])
        self.assertEqual(len(workers), 2)

    def test_nproc_per_node_cpu(self):
        workers = self.dry_run(["--nproc_per_node", "cpu", *self.fake("--exit", 0)])
        self.assertEqual(len(workers), len(os.sched_getaffinity(0)))

    def test_num_processes_runs_that_many(self):
        result = self.gangrun(["--num_processes", 3, *self.fake("--exit", 0)])
        self.assertExit(result, 0)
        self.assertEqual(sorted(self.pid_files()), [0, 1, 2])


if __name__ == "__main__":
    harness.main()
