"""Real PyTorch (GANGRUN_TEST_PYTHON: Debian's torch 1.13, or 2.x as integration.*.torch2)
under the local Slurm cluster: 3 nodes x 2 CPU workers joining one gloo process group through
env://, in the srun form (`srun gangrun --nproc_per_node 2 train.py`) and in the one-line
batch form (scripts/slurm/batch.sbatch). train.py is multinode_ddp_worker.py: every rank must
report the place Slurm gives it, the store of the job's first step, the world's all-reduce
sum and the same averaged gradients.
"""

import math
import os
import textwrap

import harness
from harness import EVENT_TIMEOUT, TEST_PYTHON
from slurm_jobs import NODES, SlurmJobTestCase, store_port

SCRIPT = os.path.join(harness.HERE, "multinode_ddp_worker.py")
WORKERS_PER_NODE = 2
WORLD = NODES * WORKERS_PER_NODE

# Six workers import torch at once on a small machine; only a hang should reach it.
JOB_TIMEOUT = 3 * EVENT_TIMEOUT


def expected_grads(world_size):
    """Each rank's batch is two rows full of its rank, so its gradient is 2 * rank for every
    weight of Linear(4, 1) and 2 for the bias; DDP averages them over the world."""
    mean_rank = sum(range(world_size)) / world_size
    return [2 * mean_rank] * 4 + [2.0]


class SlurmTorch(SlurmJobTestCase):
    python = TEST_PYTHON

    @classmethod
    def setUpClass(cls):
        harness.require_torch()
        super().setUpClass()

    def setUp(self):
        super().setUp()
        self.write_train(SCRIPT, self.out, self.pid_dir)

    def run_job(self, script):
        # Whatever torch and gangrun write to TMPDIR stays in the test's directory.
        job = self.submit(script, TMPDIR=self.tmp)
        return job, self.assert_end(job, "COMPLETED", 0, timeout=JOB_TIMEOUT)

    def assert_trained_together(self, job, output):
        results = {}
        for rank in range(WORLD):
            path = os.path.join(self.out, f"result.{rank}.json")
            self.assertTrue(os.path.exists(path), f"rank {rank} wrote no result\n{output}")
            results[rank] = self.read_json(path)
        for rank, result in results.items():
            node = rank // WORKERS_PER_NODE
            self.assertEqual(
                {key: result[key] for key in ("rank", "local_rank", "group_rank", "world_size", "local_world_size",
                                              "group_world_size", "master_addr", "master_port",
                                              "process_group_rank", "process_group_size", "all_reduce")},
                {"rank": rank, "local_rank": rank % WORKERS_PER_NODE, "group_rank": node, "world_size": WORLD,
                 "local_world_size": WORKERS_PER_NODE, "group_world_size": NODES, "master_addr": "127.0.0.1",
                 "master_port": store_port(job), "process_group_rank": rank, "process_group_size": WORLD,
                 "all_reduce": float(sum(range(WORLD)))}, f"rank {rank}")
            for got, want in zip(result["grads"], expected_grads(WORLD), strict=True):
                self.assertTrue(math.isclose(got, want, rel_tol=1e-6), f"rank {rank}: {result['grads']}")
        self.assertEqual(len({result["grad_checksum"] for result in results.values()}), 1,
                         "the ranks' averaged gradients differ")

    def test_srun_form(self):
        job, output = self.run_job(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES} --ntasks-per-node=1
            srun gangrun --nproc_per_node {WORKERS_PER_NODE} train.py
            """))
        self.assert_trained_together(job, output)

    def test_batch_form(self):
        job, output = self.run_job("batch.sbatch")
        self.assert_trained_together(job, output)


if __name__ == "__main__":
    harness.main()
