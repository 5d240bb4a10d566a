"""gangrun under MPI: started by Open MPI's mpirun, one task per node, gangrun reads its node
rank and the node count from OMPI_COMM_WORLD_* and the store's host from the MASTER_ADDR
mpirun exports (-x); and deepspeed's --launcher openmpi and accelerate's --mpirun_hostfile,
with which gangrun starts itself through mpirun. The nodes are simulated (netns_nodes.Nodes)
and run Debian's sshd (sshd_nodes.SshdNodes), through which mpirun starts its daemons
(plm_rsh_agent ssh with the test's client config); mpirun runs on node1.

Checked: every rank's place and variables; a failing rank's exit code through mpirun; a
gloo DDP job of two nodes through --launcher openmpi; accelerate's --mpirun_hostfile;
mpirun killed by SIGKILL mid-run leaves nothing of the job on any node; the bad input (no
head on several hosts; several tasks on one host without --worker-per-task) and
--worker-per-task on one host. Skipped, with the reason, where Open MPI's mpirun, network
namespaces or OpenSSH are missing.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import time

import harness
import netns_nodes
import sshd_nodes
from harness import EVENT_TIMEOUT, GANGRUN, TEST_PYTHON

MPIRUN = shutil.which("mpirun")
SLEEP_FOREVER = 10 * EVENT_TIMEOUT  # longer than any wait: only a teardown ends these workers
DDP_SCRIPT = os.path.join(harness.HERE, "multinode_ddp_worker.py")
MASTER_PORT = 29500  # each node has its own network stack


def mpirun_reason():
    if MPIRUN is None:
        return "Open MPI's mpirun is not installed (Debian: openmpi-bin)"
    version = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True, timeout=EVENT_TIMEOUT)
    if "Open MPI" not in version.stdout:
        return f"{MPIRUN} is not Open MPI's: {version.stdout.strip()[:100]}"
    return None


def root_args():
    return ["--allow-run-as-root"] if os.geteuid() == 0 else []


class MpiTestCase(harness.GangrunTestCase):
    def setUp(self):
        reason = mpirun_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def env(self, **extra):
        # Open MPI's session directories and the agents' run directories stay in the test's.
        return harness.clean_env(TMPDIR=self.tmp, GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, **extra)


class MpiOneHost(MpiTestCase):
    """mpirun with every task on this host: no nodes needed."""

    def mpirun(self, tasks, args, env=None):
        argv = [MPIRUN, *root_args(), "--oversubscribe", "-np", str(tasks), GANGRUN, "--accelerator", "cpu",
                *[str(a) for a in args]]
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=self.tmp,
                              env=env or self.env(), timeout=2 * EVENT_TIMEOUT, start_new_session=True)
        return harness.Result(argv, done.returncode, done.stdout, done.stderr, 0)

    def test_several_tasks_on_one_host_need_worker_per_task(self):
        refused = self.mpirun(2, ["--no_python", *self.fake()])
        self.assertNotEqual(refused.returncode, 0, refused.describe())
        self.assertIn("Open MPI runs 2 tasks of this job on this host (OMPI_COMM_WORLD_LOCAL_SIZE=2)",
                      refused.stderr)
        self.assertIn("--worker-per-task", refused.stderr)
        self.assert_nothing_started()

        # With it each task is a node of one worker, and the store is this host's.
        done = self.mpirun(2, ["--worker-per-task", "--no_python",
                               *self.fake("--print-env", self.path("env.{rank}.json"))])
        self.assertExit(done, 0)
        for rank, env in self.env_of_ranks(2).items():
            # LOCAL_RANK and LOCAL_WORLD_SIZE are the task's place on the host, as under srun.
            self.assertEqual((env["RANK"], env["WORLD_SIZE"], env["GROUP_RANK"], env["LOCAL_RANK"],
                              env["LOCAL_WORLD_SIZE"]), (str(rank), "2", str(rank), str(rank), "2"))
            self.assertEqual(env["MASTER_ADDR"], "127.0.0.1")


class MpiNodes(MpiTestCase):
    def setUp(self):
        reason = mpirun_reason() or netns_nodes.skip_reason() or sshd_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def cluster(self, count=2):
        nodes = netns_nodes.Nodes(self, count)
        servers = sshd_nodes.SshdNodes(self, nodes, range(1, count + 1))
        # mpirun reaches the other nodes' daemons through ssh with the test's client config.
        rsh = ["--mca", "plm_rsh_agent", "ssh", "--mca", "plm_rsh_args",
               f"-F {servers.client_config} -p {servers.port}"]
        return nodes, servers, rsh

    def hostfile(self, text):
        path = self.path("hostfile")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_on_node1(self, nodes, argv, env=None):
        """ARGV on node1 with its output in files, as GangrunTestCase.start does."""
        index = len(self._started)
        argv = [str(a) for a in argv]
        with open(self.path(f"gangrun.{index}.out"), "wb") as out, \
                open(self.path(f"gangrun.{index}.err"), "wb") as err:
            proc = nodes.popen(1, argv, stdout=out, stderr=err, env=env or self.env(), cwd=self.tmp)
        proc.argv, proc.index, proc.t0 = argv, index, time.monotonic()
        self._started.append(proc)
        return proc

    def mpirun_gangrun(self, rsh, hosts, args, exports=("MASTER_ADDR=node1",)):
        """mpirun, one task on each of HOSTS, running gangrun ARGS: what a user types."""
        exported = [word for name in ("PATH", "TMPDIR", "GANGRUN_JOB_SECRET", *exports) for word in ("-x", name)]
        return [MPIRUN, *root_args(), *rsh, "--host", ",".join(hosts), "--map-by", "ppr:1:node",
                "-np", len(hosts), *exported, GANGRUN, "--accelerator", "cpu", *args]

    def test_ranks_exit_code_and_no_head(self):
        nodes, servers, rsh = self.cluster()
        worker = self.fake("--print-env", self.path("env.{rank}.json"))
        done = self.finish(self.start_on_node1(nodes, self.mpirun_gangrun(
            rsh, ["node1", "node2"], ["--nproc_per_node", 2, "--no_python", *worker])), timeout=EVENT_TIMEOUT)
        self.assertExit(done, 0)
        for rank, env in self.env_of_ranks(4).items():
            self.assertEqual((env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["GROUP_RANK"]),
                             (str(rank), str(rank % 2), "4", str(rank // 2)))
            self.assertEqual(env["MASTER_ADDR"], nodes.address(1))
            # The task's own variables stay, as SLURM_* do under srun.
            self.assertEqual(env["OMPI_COMM_WORLD_RANK"], str(rank // 2))

        # A failing rank on node2: its code is mpirun's.
        failing = self.fake("--only-rank", "3", "--exit", "7", "--except-rank", "3", "--sleep", SLEEP_FOREVER)
        done = self.finish(self.start_on_node1(nodes, self.mpirun_gangrun(
            rsh, ["node1", "node2"], ["--nproc_per_node", 2, "--no_python", *failing])), timeout=EVENT_TIMEOUT)
        self.assertExit(done, 7)

        # No MASTER_ADDR: each task says what to do, and nothing starts.
        started_before = len(self.recorded_pids())
        done = self.finish(self.start_on_node1(nodes, self.mpirun_gangrun(
            rsh, ["node1", "node2"], ["--no_python", *self.fake()], exports=())), timeout=EVENT_TIMEOUT)
        self.assertNotEqual(done.returncode, 0, done.describe())
        self.assertIn("OMPI_COMM_WORLD_RANK=1 of OMPI_COMM_WORLD_SIZE=2", done.stderr)
        self.assertIn("-x MASTER_ADDR=HOST", done.stderr)
        self.assertEqual(len(self.recorded_pids()), started_before, "a worker started without a head")
        for node in (1, 2):
            servers.assert_only_sshd_left(node)

    def test_mpirun_killed_leaves_nothing(self):
        nodes, servers, rsh = self.cluster()
        mpirun = self.start_on_node1(nodes, self.mpirun_gangrun(
            rsh, ["node1", "node2"], ["--nproc_per_node", 2, "--no_python", *self.fake("--sleep", SLEEP_FOREVER)]))
        workers = self.wait_pid_files(4)
        os.kill(mpirun.pid, signal.SIGKILL)
        mpirun.wait(timeout=EVENT_TIMEOUT)
        self.assert_dead(workers.values(), what="workers")
        for node in (1, 2):
            servers.assert_only_sshd_left(node)

    def test_launcher_openmpi_ddp_and_accelerate(self):
        harness.require_torch()
        nodes, servers, rsh = self.cluster()
        hostfile = self.hostfile("node1 slots=1\nnode2 slots=1\n")
        out = self.path("out")
        os.mkdir(out)
        launcher_args = " ".join(["'" + word + "'" for word in rsh])

        # deepspeed's spelling: gangrun starts itself through mpirun; a gloo DDP step.
        dry = self.gangrun(["--dry-run", "--launcher", "openmpi", "-H", hostfile, "--no_python", "true"])
        self.assertExit(dry, 0)
        self.assertIn("through mpirun", dry.stdout)
        self.assertIn("-np 1 --host node2", dry.stdout)
        done = self.finish(self.start_on_node1(nodes, [
            GANGRUN, "--launcher", "openmpi", "-H", hostfile, "--launcher_args", launcher_args,
            "--master_port", MASTER_PORT, "--accelerator", "cpu", "--python", TEST_PYTHON, DDP_SCRIPT, out,
            self.pid_dir]), timeout=3 * EVENT_TIMEOUT)
        self.assertExit(done, 0)
        sums = set()
        for rank in range(2):
            with open(os.path.join(out, f"result.{rank}.json")) as f:
                result = json.load(f)
            self.assertEqual((result["rank"], result["group_rank"], result["world_size"], result["host"]),
                             (rank, rank, 2, f"node{rank + 1}"), done.describe())
            self.assertEqual(result["all_reduce"], 1)
            self.assertTrue(math.isclose(result["grads"][-1], 2.0), result["grads"])
            sums.add(result["grad_checksum"])
        self.assertEqual(len(sums), 1, "the ranks' averaged gradients differ")

        # accelerate's spelling, with its CPU launcher: one plain process per machine, which
        # finds its rank as under accelerate's own mpirun, from the task's variables.
        worker = self.fake("--print-env", self.path("env.{pid}.json"))
        done = self.finish(self.start_on_node1(nodes, [
            GANGRUN, "--mpirun_hostfile", hostfile, "--cpu", "--launcher_args", launcher_args, "--no_python",
            *worker]), timeout=EVENT_TIMEOUT)
        self.assertExit(done, 0)
        envs = []
        for name in sorted(os.listdir(self.tmp)):
            if name.startswith("env.") and name.endswith(".json"):
                envs.append(self.read_json(self.path(name))["env"])
        self.assertEqual(sorted((env["OMPI_COMM_WORLD_RANK"], env["OMPI_COMM_WORLD_SIZE"],
                                 env["ACCELERATE_USE_CPU"], "RANK" in env) for env in envs),
                         [("0", "2", "True", False), ("1", "2", "True", False)], done.describe())
        for node in (1, 2):
            servers.assert_only_sshd_left(node)


if __name__ == "__main__":
    harness.main()
