"""The local Slurm cluster of the Slurm tests (slurm_cluster.py, scripts/slurm-cluster):
start is idempotent, a batch job gets one task per node whose names resolve, generic GPUs,
heterogeneous jobs and requeue work, a job's end and exit code can be read, and neither a
cancelled job nor a stopped cluster leaves a process behind.
"""

import os
import textwrap

import harness
import slurm_cluster
from harness import EVENT_TIMEOUT

NODES = 3


def task_lines(output, tag):
    """The lines of OUTPUT that start with TAG, without it, sorted."""
    return sorted(line[len(tag):].strip() for line in output.splitlines() if line.startswith(tag))


class SlurmCluster(harness.GangrunTestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = slurm_cluster.Cluster.for_class(cls, nodes=NODES)

    def daemon_pids(self):
        return {name: slurm_cluster._read_pid(os.path.join(self.cluster.dir, "run", name))
                for name in os.listdir(os.path.join(self.cluster.dir, "run")) if name.endswith(".pid")}

    def test_start_again_changes_nothing(self):
        before = self.daemon_pids()
        self.assertEqual(sorted(before), sorted(["munged.pid", "slurmctld.pid"]
                                                + [f"slurmd-node{i}.pid" for i in range(1, NODES + 1)]))
        self.cluster.start()
        self.assertEqual(self.daemon_pids(), before)
        result = self.cluster.run(["sinfo", "-h", "-N", "-o", "%N %T"])
        self.assertEqual(result.stdout.split(), [w for i in range(1, NODES + 1) for w in (f"node{i}", "idle")],
                         result.describe())

    def test_a_batch_job_runs_one_task_per_node_whose_names_resolve_and_its_exit_code_is_read(self):
        job = self.cluster.sbatch(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES} --ntasks-per-node=1
            srun bash -c 'echo "task $SLURM_PROCID $SLURM_NODEID $SLURMD_NODENAME $(getent hosts node2 | xargs)"'
            exit 7
            """), cwd=self.tmp)
        end = self.cluster.wait_job_end(job)
        self.assertEqual(end, slurm_cluster.JobEnd("FAILED", 7, 0, 0))
        expected = [f"{i} {i} node{i + 1} 127.0.0.1 node1 node2 node3" for i in range(NODES)]
        self.assertEqual(task_lines(self.cluster.job_output(job), "task "), expected)
        self.assertTrue(os.path.exists(self.path(f"slurm-{job}.out")))

    def test_tasks_see_the_two_generic_gpus_of_their_node(self):
        job = self.cluster.sbatch(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES} --ntasks-per-node=1 --gpus-per-node=2
            srun bash -c 'echo "task $SLURM_PROCID $SLURM_GPUS_ON_NODE $CUDA_VISIBLE_DEVICES"'
            """), cwd=self.tmp)
        self.assertEqual(self.cluster.wait_job_end(job).state, "COMPLETED")
        self.assertEqual(task_lines(self.cluster.job_output(job), "task "), [f"{i} 2 0,1" for i in range(NODES)])

    def test_a_heterogeneous_step_spans_both_components(self):
        job = self.cluster.sbatch(textwrap.dedent("""\
            #!/bin/bash
            #SBATCH -N 1
            #SBATCH hetjob
            #SBATCH -N 2
            srun --het-group=0,1 bash -c 'echo "task $SLURM_PROCID $SLURM_JOB_ID $SLURM_NODEID" \
                "$SLURM_STEP_NUM_NODES $SLURM_STEP_NODELIST $SLURM_HET_SIZE $SLURM_JOB_NODELIST_HET_GROUP_1"'
            """), cwd=self.tmp)
        self.assertEqual(self.cluster.wait_job_end(job).state, "COMPLETED")
        self.assertEqual(task_lines(self.cluster.job_output(job), "task "),
                         [f"{i} {job} {i} 3 node[1-3] 2 node[2-3]" for i in range(NODES)])

    def test_a_requeued_job_runs_again_with_its_restart_count(self):
        started = self.path("started.{}")
        job = self.cluster.sbatch(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N 2 --open-mode=append
            echo "run ${{SLURM_RESTART_COUNT:-none}}"
            touch {started.format("${SLURM_RESTART_COUNT:-0}")}
            [ "${{SLURM_RESTART_COUNT:-0}}" = 1 ] && exit 0
            exec sleep 600
            """), cwd=self.tmp)
        harness.wait_for(lambda: os.path.exists(started.format(0)), EVENT_TIMEOUT, "the first run")
        self.cluster.requeue(job)
        self.assertEqual(self.cluster.wait_job_end(job), slurm_cluster.JobEnd("COMPLETED", 0, 0, 1))
        self.assertEqual(task_lines(self.cluster.job_output(job), "run "), ["1", "none"])

    def test_a_cancelled_job_leaves_no_process(self):
        ready = self.path("ready.{}")
        job = self.cluster.sbatch(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES}
            srun bash -c 'touch {ready.format("$SLURM_PROCID")}; exec sleep 600'
            """), cwd=self.tmp)
        harness.wait_for(lambda: all(os.path.exists(ready.format(i)) for i in range(NODES)), EVENT_TIMEOUT,
                         "every task to start")
        self.assertGreaterEqual(len(self.cluster.leftover_processes(job)), 2 * NODES)  # srun, tasks, batch shell
        self.cluster.scancel(job)
        end = self.cluster.wait_job_end(job)
        self.assertEqual((end.state, end.signal), ("CANCELLED", 15))
        harness.wait_for(lambda: not self.cluster.leftover_processes(job), EVENT_TIMEOUT,
                         f"the processes of job {job} to end")


class SlurmClusterStop(harness.GangrunTestCase):
    def setUp(self):
        reason = slurm_cluster.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def test_stop_ends_the_running_jobs_and_every_daemon(self):
        cluster = slurm_cluster.Cluster(nodes=2)
        self.addCleanup(cluster.close)
        cluster.start()
        ready = self.path("ready.{}")
        job = cluster.sbatch(f"#!/bin/bash\n#SBATCH -N 2\nsrun bash -c 'touch {ready.format('$SLURM_PROCID')}; "
                             "exec sleep 600'\n", cwd=self.tmp)
        harness.wait_for(lambda: all(os.path.exists(ready.format(i)) for i in range(2)), EVENT_TIMEOUT,
                         "every task to start")
        daemons = [slurm_cluster._read_pid(os.path.join(cluster.dir, "run", name))
                   for name in os.listdir(os.path.join(cluster.dir, "run")) if name.endswith(".pid")]
        self.assertEqual(len(daemons), 2 + 2)
        self.assertTrue(cluster.leftover_processes(job))

        result = cluster.script("stop")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assert_dead(daemons, what="the daemons")
        self.assertEqual(cluster.processes(), [])
        self.assertEqual([name for name in os.listdir(os.path.join(cluster.dir, "run")) if name.endswith(".pid")], [])

        result = cluster.script("stop")  # again: nothing to do
        self.assertEqual(result.returncode, 0, result.describe())
        cluster.close()


if __name__ == "__main__":
    harness.main()
