"""gangrun under a real Slurm cluster (slurm_cluster.py: three nodes on this machine, two
fake GPUs each): the recipes of scripts/slurm/ as written, and small job scripts of the
tests' own, submitted with sbatch. gangrun takes its place from the step (nodes, node rank,
head node, store port, run id, GPUs), starts itself through srun in the batch form, refuses
several tasks per node unless --worker-per-task, says so when the head node does not
resolve, stops every node when a worker fails anywhere and ends with its exit code, leaves
no process behind scancel, and passes SIGUSR1 to every worker without stopping them, so
that a job can save a checkpoint and requeue itself.

Jobs find gangrun and train.py as slurm_jobs.py describes; train.py is
slurm_train_worker.py with the test's action, or a job runs the fake worker itself. No
PyTorch here: test_slurm_torch.py has it.
"""

import glob
import os
import re
import textwrap

import harness
import slurm_cluster
from harness import EVENT_TIMEOUT, FAKE
from slurm_jobs import NODES, SlurmJobTestCase, labelled, store_port


def tasks_srun_saw_exit(output, node, code):
    """The tasks srun reports as exited with CODE on NODE. srun groups the tasks whose ends reach
    it together ("tasks 2-3"), or names each ("task 2", "task 3") when they end apart."""
    tasks = set()
    pattern = rf"srun: error: {node}: tasks? ([0-9,-]+): Exited with exit code {code}\b"
    for listed in re.findall(pattern, output):
        for part in listed.split(","):
            first, _, last = part.partition("-")
            tasks.update(range(int(first), int(last or first) + 1))
    return tasks


WORKER = os.path.join(harness.HERE, "slurm_train_worker.py")
WORKERS_PER_NODE = 2
WORLD = NODES * WORKERS_PER_NODE


def spaced(text):
    """TEXT with every run of blanks made one space (the dry run aligns its columns)."""
    return re.sub(r"[ \t]+", " ", text)


class Slurm(SlurmJobTestCase):
    def train(self, action, *args):
        """Writes the job's train.py: slurm_train_worker.py's ACTION with ARGS."""
        self.write_train(WORKER, self.out, action, *args)

    def worker_envs(self):
        """{rank: (pid, environment)} of every worker that started."""
        found = {}
        for path in glob.glob(os.path.join(self.out, "env.*.json")):
            doc = self.read_json(path)
            found[int(doc["env"]["RANK"])] = (doc["pid"], doc["env"])
        return found

    def started_ranks(self):
        with open(os.path.join(self.out, "started")) as f:
            return sorted(int(line) for line in f if line.strip())

    def wait_ready(self, count=WORLD):
        def ready():
            return len([name for name in os.listdir(self.out) if re.fullmatch(r"ready\.\d+", name)]) >= count
        harness.wait_for(ready, EVENT_TIMEOUT, f"{count} workers to be ready")

    def assert_one_gang(self, job, output, gpus):
        """Every rank ran once, two per node in node order, with the head node, store port and
        run id Slurm gives job JOB's first step (and the step's two GPUs when GPUS)."""
        self.assertEqual(self.started_ranks(), list(range(WORLD)), output)
        envs = self.worker_envs()
        for rank in range(WORLD):
            node = rank // WORKERS_PER_NODE
            env = envs[rank][1]
            seen = {name: env.get(name) for name in ("SLURMD_NODENAME", "RANK", "LOCAL_RANK", "GROUP_RANK",
                                                     "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE",
                                                     "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")}
            self.assertEqual(seen, {
                "SLURMD_NODENAME": f"node{node + 1}", "RANK": str(rank), "LOCAL_RANK": str(rank % WORKERS_PER_NODE),
                "GROUP_RANK": str(node), "WORLD_SIZE": str(WORLD), "LOCAL_WORLD_SIZE": str(WORKERS_PER_NODE),
                "GROUP_WORLD_SIZE": str(NODES), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store_port(job)),
                "TORCHELASTIC_RUN_ID": f"{job}.0"}, f"rank {rank}\n{output}")
            if gpus:
                self.assertEqual(env.get("CUDA_VISIBLE_DEVICES"), "0,1", f"rank {rank}")

    def assert_workers_gone(self):
        self.assert_dead([pid for pid, _ in self.worker_envs().values()], what="workers")

    # ---- one gang over the job's nodes

    def test_srun_form_runs_one_worker_per_gpu_on_every_node(self):
        self.train("record")
        job = self.submit("srun-gpus.sbatch")
        output = self.assert_end(job, "COMPLETED", 0)
        self.assert_one_gang(job, output, gpus=True)

    def test_batch_form_starts_gangrun_on_every_node_through_srun(self):
        self.train("record")
        job = self.submit("batch.sbatch")
        output = self.assert_end(job, "COMPLETED", 0)
        self.assert_one_gang(job, output, gpus=False)
        self.assertIn(f"starting gangrun on {NODES} nodes of Slurm job {job}: ", output)
        self.assertRegex(output, r"srun --nodes=3 --ntasks=3 --ntasks-per-node=1 .*--kill-on-bad-exit=0 ")

    def test_heterogeneous_job_makes_one_gang_of_both_components(self):
        self.train("record")
        job = self.submit("hetjob.sbatch")
        output = self.assert_end(job, "COMPLETED", 0)
        self.assert_one_gang(job, output, gpus=False)

    # ---- what gangrun reads from the step, and what it refuses

    def test_dry_run_in_a_step_names_slurm_as_the_source_and_the_command_line_wins(self):
        job = self.submit(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES}
            srun --label gangrun --dry-run -v --no_python true
            echo step 0 exited $?
            srun --label gangrun --dry-run -v --master_port 23456 --no_python true
            echo step 1 exited $?
            """))
        output = self.assert_end(job, "COMPLETED", 0)
        self.assertIn("step 0 exited 0", output)
        self.assertIn("step 1 exited 0", output)
        steps = output.split("step 0 exited 0")
        for step, port_line in ((0, f"master_port {store_port(job)} (SLURM_JOB_ID={job}, SLURM_STEP_ID=0) Slurm"),
                                (1, "master_port 23456 command line")):
            for task in range(NODES):
                lines = spaced(labelled(steps[step], task))
                for expected in (f"slurm: job {job}, step {step}, {NODES} nodes (node[1-3])",
                                 f"nnodes {NODES} (SLURM_STEP_NUM_NODES={NODES}) Slurm",
                                 f"node_rank {task} (SLURM_NODEID={task}) Slurm",
                                 "master_addr node1 (the first host of SLURM_STEP_NODELIST=node[1-3]) Slurm",
                                 port_line,
                                 f"rdzv_id {job}.{step} (SLURM_JOB_ID={job}, SLURM_STEP_ID={step}) Slurm"):
                    self.assertIn(expected, lines, f"task {task} of step {step}\n{output}")

    def test_several_tasks_per_node_are_refused_without_worker_per_task(self):
        job = self.submit(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES} --ntasks-per-node=2
            srun --label gangrun --no_python {FAKE} --touch {self.out}/started.{{rank}}
            echo step exited $?
            """))
        output = self.assert_end(job, "COMPLETED", 0)
        self.assertIn("step exited 2", output)
        for task in range(WORLD):
            text = labelled(output, task)
            self.assertIn("srun --ntasks-per-node=1", text, f"task {task}\n{output}")
            self.assertIn("--worker-per-task", text, f"task {task}\n{output}")
        for node in range(1, NODES + 1):
            self.assertEqual(tasks_srun_saw_exit(output, f"node{node}", 2), {2 * node - 2, 2 * node - 1},
                             output)
        self.assertEqual(glob.glob(os.path.join(self.out, "started.*")), [])

    def test_worker_per_task_makes_each_task_one_worker(self):
        job = self.submit(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES} --ntasks-per-node=2
            srun --ntasks-per-node=2 gangrun --worker-per-task --no_python {FAKE} \\
                --print-env {self.out}/env.{{rank}}.json
            """))
        output = self.assert_end(job, "COMPLETED", 0)
        envs = {}
        for rank in range(WORLD):
            envs[rank] = self.read_json(os.path.join(self.out, f"env.{rank}.json"))["env"]
        self.assertEqual(len(glob.glob(os.path.join(self.out, "env.*.json"))), WORLD, output)
        for rank, env in envs.items():
            self.assertEqual(
                {name: env.get(name) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                                  "SLURMD_NODENAME")},
                {"RANK": env["SLURM_PROCID"], "LOCAL_RANK": env["SLURM_LOCALID"], "WORLD_SIZE": str(WORLD),
                 "LOCAL_WORLD_SIZE": "2", "SLURMD_NODENAME": f"node{rank // 2 + 1}"}, f"rank {rank}\n{output}")
        self.assertEqual(sorted(env["LOCAL_RANK"] for env in envs.values()), ["0", "0", "0", "1", "1", "1"])

    def test_a_head_node_that_does_not_resolve_is_a_usage_error_naming_the_fix(self):
        # The nodes resolve node1..3 through the hosts file bound in their mount namespace;
        # these tasks bind one without them, so the head's name really does not resolve. They
        # bind a resolver file too, naming a name server on loopback where none listens: the
        # names are looked up on this machine alone, and no query leaves it.
        hosts = self.path("hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n")
        resolver = self.path("resolv.conf")
        with open(resolver, "w") as f:
            f.write("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
        private = f"unshare --mount sh -c 'mount --bind {hosts} /etc/hosts && mount --bind {resolver} /etc/resolv.conf && exec \"$0\" \"$@\"'"
        job = self.submit(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N 2
            srun --label {private} gangrun --no_python true
            echo step 0 exited $?
            srun --label {private} gangrun --master_addr nosuchhost.invalid --nnodes 2 --node_rank 1 --no_python true
            echo step 1 exited $?
            """))
        output = self.assert_end(job, "COMPLETED", 0)
        self.assertIn("step 0 exited 2", output)
        self.assertIn("step 1 exited 2", output)
        for task in range(2):
            text = spaced(labelled(output, task))
            self.assertIn(f"the store's host 'node1' (the head node: the first host of SLURM_STEP_NODELIST=node[1-2])"
                          f" does not resolve on node{task + 1}", text, f"task {task}\n{output}")
            self.assertIn("give --master_addr", text)
            self.assertIn("add 'node1' to /etc/hosts", text)
            self.assertIn(f"the store's host 'nosuchhost.invalid' (--master_addr) does not resolve on node{task + 1}",
                          text)

    # ---- a worker failing on one node

    def assert_failure_told(self, output, root_task, failing_rank, code):
        """Task ROOT_TASK (labelled by srun) printed the failure summary; the others one line
        naming the failed rank and its node by its Slurm name."""
        for task in range(NODES):
            text = labelled(output, task)
            summaries = len(re.findall(r"FAILED \(attempt 0\)", text))
            # Named by node rank, host and address: every simulated node's address is loopback.
            elsewhere = (f"the job ended on another node: rank {failing_rank} on node {root_task} "
                         f"(node{root_task + 1}, 127.0.0.1) failed (exit code {code})")
            if task == root_task:
                self.assertEqual(summaries, 1, f"task {task}\n{output}")
                self.assertRegex(text, rf"rank: +{failing_rank} \(local_rank: 1\)")
                self.assertNotIn(elsewhere, text)
            else:
                self.assertEqual(summaries, 0, f"task {task}\n{output}")
                self.assertIn(elsewhere + f" (this node exits with {code})", text, f"task {task}\n{output}")
        for task in range(NODES):
            self.assertIn(f"srun: error: node{task + 1}: task {task}: Exited with exit code {code}", output)

    def test_a_failing_worker_in_the_srun_form_ends_every_node_with_its_code(self):
        ready = " ".join(f"--only-rank 3 --wait-file {self.out}/ready.{r} {EVENT_TIMEOUT}" for r in (0, 1, 2, 4, 5))
        job = self.submit(textwrap.dedent(f"""\
            #!/bin/bash
            #SBATCH -N {NODES}
            srun --label bash -c 'exec gangrun --report {self.out}/report-$SLURMD_NODENAME.json \\
                --nproc_per_node 2 --no_python {FAKE} --pid-dir {self.pid_dir} \\
                --touch {self.out}/ready.{{rank}} {ready} --only-rank 3 --exit 7 --sleep {EVENT_TIMEOUT}'
            """))
        output = self.assert_end(job, "FAILED", 7)
        self.assert_failure_told(output, root_task=1, failing_rank=3, code=7)
        for node in range(1, NODES + 1):
            report = self.read_json(os.path.join(self.out, f"report-node{node}.json"))
            self.assertEqual(report["exit_code"], 7, f"node{node}")
            self.assertEqual((report["job"]["exit_code"], report["job"]["root_cause_here"]), (7, node == 2),
                             f"node{node}: {report['job']}")
            self.assertRegex(report["job"]["message"], r"rank 3 on node 1 \(node2, [\d.]+\) failed \(exit code 7\)")
        self.assert_dead(self.recorded_pids(), what="workers")

    def test_a_failing_worker_in_the_batch_form_ends_every_node_with_its_code(self):
        self.train("fail", 3, 7)
        job = self.submit("batch.sbatch", GANGRUN_LAUNCHER_ARGS="--label")
        output = self.assert_end(job, "FAILED", 7)
        self.assert_failure_told(output, root_task=1, failing_rank=3, code=7)
        self.assertEqual(self.started_ranks(), list(range(WORLD)))
        self.assert_workers_gone()

    # ---- scancel

    def assert_cancel_ends_everything(self, recipe):
        self.train("wait")
        job = self.submit(recipe)
        self.wait_ready()
        self.cluster.scancel(job)
        end, output = self.end_of(job)
        self.assertEqual(end.state, "CANCELLED", output)
        self.assertEqual(self.started_ranks(), list(range(WORLD)))
        self.assert_workers_gone()

    def test_scancel_in_the_srun_form_leaves_no_process(self):
        self.assert_cancel_ends_everything("srun-gpus.sbatch")

    def test_scancel_in_the_batch_form_leaves_no_process(self):
        self.assert_cancel_ends_everything("batch.sbatch")

    # ---- preemption notices

    def assert_every_worker_got_usr1(self, recipe, batch_only):
        self.train("usr1")
        job = self.submit(recipe)
        self.wait_ready()
        self.cluster.scancel(job, "USR1", batch_only=batch_only)
        output = self.assert_end(job, "COMPLETED", 0)
        for rank in range(WORLD):
            with open(os.path.join(self.out, f"usr1.{rank}")) as f:
                self.assertEqual(f.read(), f"usr1 {rank}\n", output)
            self.assertIn(f"[rank{rank}]: run 0 rank {rank} got SIGUSR1", output)
        self.assertEqual(self.started_ranks(), list(range(WORLD)))

    def test_usr1_to_the_steps_reaches_every_worker_without_stopping_them(self):
        self.assert_every_worker_got_usr1("srun-gpus.sbatch", batch_only=False)

    def test_usr1_to_the_batch_shell_reaches_every_worker_without_stopping_them(self):
        self.assert_every_worker_got_usr1("batch.sbatch", batch_only=True)

    def test_preemption_saves_a_checkpoint_requeues_and_resumes(self):
        self.train("preempt")
        job = self.submit("preemptible.sbatch")
        self.wait_ready()
        self.cluster.scancel(job, "USR1", batch_only=True)
        harness.wait_for(lambda: self.cluster.job(job).get("Restarts") == "1", EVENT_TIMEOUT,
                         f"job {job} to be requeued")
        end, output = self.end_of(job)
        self.assertEqual(end, slurm_cluster.JobEnd("COMPLETED", 0, 0, 1), output)
        for rank in range(WORLD):
            for line in (f"run 0 rank {rank} saved its checkpoint", f"run 1 rank {rank} resumed from its checkpoint"):
                self.assertIn(f"[rank{rank}]: {line}", output)
        # (Rank 0's own line after `scontrol requeue` may be cut off by the requeue itself.)
        self.assertEqual(self.started_ranks(), sorted(2 * list(range(WORLD))))
        self.assert_workers_gone()


if __name__ == "__main__":
    harness.main()
