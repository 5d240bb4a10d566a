"""Real PyTorch (GANGRUN_TEST_PYTHON: Debian's torch 1.13, or 2.x as integration.*.torch2)
across simulated nodes (netns_nodes.py): one gangrun agent per node, CPU workers joining one
gloo process group through env://, one DDP step and an all-reduce. Every rank must report
the place the layout gives it (node, local rank, node rank), the whole world's sum and the
same averaged gradients, and every agent must exit 0.

The agents run in the nodes; the test only starts them and reads the files the workers
write into its private directory.
"""

import math
import os
import re
import subprocess

import harness
import netns_nodes
import static_nodes
from harness import EVENT_TIMEOUT, GANGRUN, TEST_PYTHON, GangrunTestCase

SCRIPT = os.path.join(harness.HERE, "multinode_ddp_worker.py")

# Each node has its own network stack, so fixed ports cannot meet another test's.
MASTER_PORT = 29500
RDZV_PORT = 29400

# How long the agents may take together: every worker imports torch at once, on a small
# machine perhaps six of them per core. Only a hang should reach it.
JOB_TIMEOUT = 3 * EVENT_TIMEOUT

# The worker's batch is two rows full of its rank and its loss the sum of Linear(4, 1)'s
# outputs, so each rank's gradient is 2 * rank for every weight and 2 for the bias; DDP
# averages them over the world.
def expected_grads(world_size):
    mean_rank = sum(range(world_size)) / world_size
    return [2 * mean_rank] * 4 + [2.0]


class MultinodeTorch(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        reason = netns_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()
        self.out = self.path("out")
        os.mkdir(self.out)

    # ---- running the job

    def worker_argv(self):
        return ["--python", TEST_PYTHON, SCRIPT, self.out, self.pid_dir]

    def job_env(self):
        # Run directories, and whatever torch writes to TMPDIR, stay in the test's directory.
        return harness.clean_env(TMPDIR=self.tmp, GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET)

    def run_job(self, nodes, agent_args):
        """Starts one agent per node, node I with gangrun AGENT_ARGS[I - 1] plus the worker,
        all at once, and waits for every one; fails with their output when one has not
        ended within JOB_TIMEOUT. Returns [(node, exit code, output)]."""
        env = self.job_env()
        started = []
        for node, args in enumerate(agent_args, start=1):
            log_path = self.path(f"agent{node}.log")
            with open(log_path, "wb") as log:
                proc = nodes.popen(node, [GANGRUN, *[str(a) for a in args], *self.worker_argv()],
                                   stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp)
            started.append((node, proc, log_path))
        ended = []
        for node, proc, log_path in started:
            try:
                proc.wait(timeout=JOB_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.fail(f"the agent on node {node} did not end within {JOB_TIMEOUT}s" + self.logs(started))
            ended.append((node, proc.returncode, self.read_log(log_path)))
        for node, returncode, _ in ended:
            self.assertEqual(returncode, 0, f"the agent on node {node} exited {returncode}" + self.logs(started))
        return ended

    def read_log(self, path):
        with open(path, errors="replace") as f:
            return f.read()

    def logs(self, started):
        return "".join(f"\n--- agent on node {node} (tail) ---\n{self.read_log(path)[-3000:]}"
                       for node, _, path in started)

    # ---- what the workers wrote

    def check_results(self, workers_per_node, master_addr, master_port, outputs, hosts=None):
        """Every rank of the layout WORKERS_PER_NODE (the node of group rank G, HOSTS[G],
        node1, node2, ... by default, runs WORKERS_PER_NODE[G] workers, ranks contiguous in
        that order) wrote what its place says, the world's sum and the same averaged
        gradients as every other rank."""
        hosts = hosts or [f"node{i + 1}" for i in range(len(workers_per_node))]
        where = "".join(f"\n--- agent on node {node} ---\n{output[-3000:]}" for node, _, output in outputs)
        world = sum(workers_per_node)
        names = sorted(os.listdir(self.out))
        self.assertEqual(names, sorted(f"result.{rank}.json" for rank in range(world)), where)
        checksums = set()
        rank = 0
        for node_rank, local_world in enumerate(workers_per_node):
            for local_rank in range(local_world):
                result = self.read_json(os.path.join(self.out, f"result.{rank}.json"))
                self.assertEqual({key: result[key] for key in (
                    "rank", "local_rank", "group_rank", "world_size", "local_world_size", "group_world_size",
                    "host", "master_addr", "master_port", "process_group_rank", "process_group_size")}, {
                    "rank": rank, "local_rank": local_rank, "group_rank": node_rank, "world_size": world,
                    "local_world_size": local_world, "group_world_size": len(workers_per_node),
                    "host": hosts[node_rank], "master_addr": master_addr, "master_port": master_port,
                    "process_group_rank": rank, "process_group_size": world}, f"rank {rank}" + where)
                self.assertEqual(result["all_reduce"], sum(range(world)), f"rank {rank}'s all-reduce")
                for got, want in zip(result["grads"], expected_grads(world), strict=True):
                    self.assertTrue(math.isclose(got, want, rel_tol=1e-6),
                                    f"rank {rank}: averaged gradients {result['grads']}, expected "
                                    f"{expected_grads(world)}")
                checksums.add(result["grad_checksum"])
                rank += 1
        self.assertEqual(len(checksums), 1, f"the ranks' averaged gradients differ: {sorted(checksums)}")

    # ---- the layouts

    def static_job(self, workers_per_node):
        with netns_nodes.Nodes(self, len(workers_per_node)) as nodes:
            master_addr = nodes.address(1)
            job = static_nodes.StaticJob(self, len(workers_per_node), nodes=nodes, master_port=MASTER_PORT,
                                         env=self.job_env())
            job.start_all(lambda node_rank: ["--nproc_per_node", workers_per_node[node_rank], *self.worker_argv()])
            results = job.finish(timeout=JOB_TIMEOUT)
            for node_rank, result in results.items():
                self.assertEqual(result.returncode, 0, f"the agent on node {node_rank + 1} exited "
                                 f"{result.returncode}" + static_nodes.describe(results))
            outputs = [(node_rank + 1, result.returncode, result.stdout + result.stderr)
                       for node_rank, result in results.items()]
        self.check_results(workers_per_node, master_addr, MASTER_PORT, outputs)

    def test_static_three_nodes_of_two_workers(self):
        self.static_job([2, 2, 2])

    def test_static_two_one_and_three_workers(self):
        self.static_job([2, 1, 3])

    def test_c10d_three_nodes_of_two_workers(self):
        # The store's host (node1) is node rank 0; the others follow the order they
        # joined in, which node1's agent logs.
        with netns_nodes.Nodes(self, 3) as nodes:
            outputs = self.run_job(nodes, [
                ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"node1:{RDZV_PORT}", "--rdzv_id", "job",
                 "--nnodes", 3, "--nproc_per_node", 2]] * 3)
        joined = re.findall(r"rendezvous: the agent on (node\d) \([\d.]+\) joined", outputs[0][2])
        self.assertEqual(sorted(joined), ["node1", "node2", "node3"], outputs[0][2])
        hosts = ["node1", *(host for host in joined if host != "node1")]
        # The workers get node1's address as a number, not the name given.
        self.check_results([2, 2, 2], nodes.address(1), RDZV_PORT, outputs, hosts=hosts)


if __name__ == "__main__":
    harness.main()
