"""--dry-run (and --dry-run --json) print the plan: per rank the command and every variable
gangrun sets; nothing starts, no port opens: everything is validated before anything is done.
The JSON schema the tests assume is in harness.py (SCHEMA)."""

import json
import os
import shutil
import socket
import subprocess

import harness
from harness import GangrunTestCase, TEST_PYTHON, expected_worker_env


class DryRunJson(GangrunTestCase):
    def test_lists_every_worker_with_argv_and_env_and_starts_nothing(self):
        command = self.fake("--print-env", self.path("env.{rank}.json"))
        workers = self.dry_run(["--nproc_per_node", 3, *command])
        self.assertEqual([(w["rank"], w["local_rank"]) for w in workers], [(0, 0), (1, 1), (2, 2)])
        allowed = set(harness.WORKER_VARIABLES) | set(harness.CONDITIONAL_WORKER_VARIABLES) | set(harness.VISIBILITY_VARIABLES)
        ports = set()
        for w in workers:
            self.assertEqual(w["argv"], command, f"rank {w['rank']}: argv")
            env = w["env"]
            self.assertEqual(set(harness.WORKER_VARIABLES) - set(env), set(), "variables gangrun sets are missing")
            self.assertEqual(set(env) - allowed, set(), "the env object should hold the variables gangrun sets")
            expected = expected_worker_env(rank=w["rank"], local_rank=w["local_rank"], nproc_per_node=3,
                                           launcher_env=harness.clean_env())
            for name, value in expected.items():
                self.assertEqual(env.get(name), value, f"rank {w['rank']}: {name}")
            ports.add(env["MASTER_PORT"])
        self.assertEqual(len(ports), 1)
        self.assert_nothing_started()
        self.assertFalse(os.path.exists(self.path("env.0.json")))

    def test_python_program_module_and_local_rank_macro(self):
        script = self.path("train.py")
        with open(script, "w") as f:
            f.write("print('never run')\n")
        workers = self.dry_run(["--nproc_per_node", 2, "--python", TEST_PYTHON, script, "--lr", "0.1",
                                "--out=dir_${local_rank}"])
        for w in workers:
            self.assertEqual(w["argv"], [TEST_PYTHON, "-u", script, "--lr", "0.1", f"--out=dir_{w['local_rank']}"])
        workers = self.dry_run(["--nproc_per_node", 2, "--python", TEST_PYTHON, "-m", "some.module", "x"])
        for w in workers:
            self.assertEqual(w["argv"], [TEST_PYTHON, "-u", "-m", "some.module", "x"])

    def test_no_python_runs_the_program_directly(self):
        fake = os.path.abspath(harness.FAKE)
        workers = self.dry_run(["--no_python", fake, "--exit", "0"])
        self.assertEqual(workers[0]["argv"], [fake, "--exit", "0"])

    def test_plan_matches_what_workers_get(self):
        port = harness.free_port()
        options = ["--nproc_per_node", 2, "--master_port", port, "--rdzv_id", "same", "--max_restarts", 1]
        command = self.fake("--print-env", self.path("env.{rank}.json"))
        planned = self.dry_run([*options, *command])
        self.assert_nothing_started()
        result = self.gangrun([*options, *command])
        self.assertExit(result, 0)
        for w in planned:
            seen = self.read_json(self.path(f"env.{w['rank']}.json"))
            self.assertEqual(seen["argv"], w["argv"])
            for name, value in w["env"].items():
                if name == "TORCHELASTIC_ERROR_FILE":
                    continue  # may live in a directory made per run
                self.assertEqual(seen["env"].get(name), value, f"rank {w['rank']}: {name} differs from the dry run")


class DryRunText(GangrunTestCase):
    def test_text_names_every_variable_and_command_per_rank(self):
        port = harness.free_port()
        result = self.gangrun(["--dry-run", "--nproc_per_node", 3, "--master_port", port,
                               *self.fake("--print-env", self.path("env.{rank}.json"))], timeout=30)
        self.assertExit(result, 0)
        text = result.stdout + result.stderr
        for name in harness.WORKER_VARIABLES:
            self.assertIn(name, text)
        self.assertIn(str(port), text)
        self.assertGreaterEqual(text.count(harness.FAKE), 3, "the command of every rank")
        for rank in range(3):
            self.assertRegex(text, rf"(?i)rank\W{{0,3}}{rank}\b")
        self.assert_nothing_started()


    def test_each_workers_cpus_under_bind_cores_to_rank(self):
        def plan(*binding, json_output=True):
            args = ["--dry-run", *(["--json"] if json_output else []), "--nproc_per_node", 2, *binding,
                    "--no_python", "/bin/true"]
            result = self.gangrun(args, timeout=30)
            self.assertExit(result, 0)
            return result.stdout
        binding = ("--bind_cores_to_rank", "--bind_core_list", "0,1")
        doc = json.loads(plan(*binding))
        self.assertEqual([w["cpus"] for w in doc["workers"]], [[0], [1]])
        self.assertEqual([w["cpus"] for w in json.loads(plan())["workers"]], [None, None])
        text = plan(*binding, json_output=False)
        self.assertIn("cpus:    0 (--bind_cores_to_rank)", text)
        self.assertIn("cpus:    1 (--bind_cores_to_rank)", text)
        self.assert_nothing_started()


class DryRunJobLine(GangrunTestCase):
    """Under any job system the text plan names it in one `job:` line: the system, its job
    id where it has one, this node's rank and the node count."""

    def job_line(self, variables):
        result = self.gangrun(["--dry-run", "--accelerator", "cpu", "--no_python", "true"],
                              env=harness.clean_env(**variables), timeout=30)
        self.assertExit(result, 0)
        lines = [line.split("job:", 1)[1].strip() for line in result.stdout.splitlines()
                 if line.startswith("  job:")]
        self.assertEqual(len(lines), 1, result.stdout)
        self.assert_nothing_started()
        return lines[0]

    def test_names_the_system_job_and_node(self):
        host = socket.gethostname()
        # PBS and LSF on one host: on several, the dry run is the ssh start's (the next test).
        node_file = self.path("aux-1742.pbs-server")
        with open(node_file, "w") as f:
            f.write(f"{host}\n{host}\n")
        pbs = {"PBS_JOBID": "1742.pbs-server", "PBS_NODEFILE": node_file, "PBS_ENVIRONMENT": "PBS_BATCH"}
        lsf = {"LSB_JOBID": "5511", "LSB_MCPU_HOSTS": f"{host} 2"}
        slurm = {"SLURM_JOB_ID": 4711, "SLURM_STEP_ID": 0, "SLURM_STEP_NUM_NODES": 1, "SLURM_STEP_NODELIST": host,
                 "SLURM_NODEID": 0, "SLURM_STEP_TASKS_PER_NODE": 1}
        kubeflow = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": 29500,
                    "WORLD_SIZE": 2, "RANK": 1}
        skypilot = {"SKYPILOT_NODE_RANK": 1, "SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.2",
                    "SKYPILOT_NUM_NODES": 2, "SKYPILOT_TASK_ID": "sky-2026-11-26_train_1"}
        open_mpi = {"OMPI_COMM_WORLD_RANK": 1, "OMPI_COMM_WORLD_SIZE": 2, "OMPI_COMM_WORLD_LOCAL_RANK": 0,
                    "OMPI_COMM_WORLD_LOCAL_SIZE": 1, "OMPI_MCA_ess_base_jobid": 3418030081,
                    "MASTER_ADDR": "127.0.0.1"}
        hydra = {"PMI_RANK": 1, "PMI_SIZE": 2, "MPI_LOCALRANKID": 0, "MPI_LOCALNRANKS": 1, "MASTER_ADDR": "127.0.0.1"}
        expected = (
            (slurm, "Slurm job 4711, node 0 of 1"),
            (pbs, f"PBS job 1742.pbs-server, node 0 of 1, hosts from PBS_NODEFILE={node_file}"),
            (lsf, f"LSF job 5511, node 0 of 1, hosts from LSB_MCPU_HOSTS={host} 2"),
            (kubeflow, "Kubeflow PyTorchJob job 127.0.0.1, node 1 of 2"),
            (skypilot, "SkyPilot job sky-2026-11-26_train_1, node 1 of 2"),
            (open_mpi, "Open MPI job 3418030081, node 1 of 2"),
            (hydra, "MPICH/Intel MPI (Hydra), no job id, node 1 of 2"),
        )
        for variables, line in expected:
            with self.subTest(line.split()[0]):
                self.assertEqual(self.job_line(variables), line)

    def test_a_batch_job_of_several_hosts_names_it_too(self):
        """PBS and LSF on several hosts: the dry run is the ssh start's, with the same line. The
        job script runs on the first host, this one; the other is an address, which no name
        lookup leaves the machine for."""
        host = socket.gethostname()
        node_file = self.path("aux-1742.pbs-server")
        with open(node_file, "w") as f:
            f.write(f"{host}\n{host}\n127.0.0.2\n127.0.0.2\n")
        pbs = {"PBS_JOBID": "1742.pbs-server", "PBS_NODEFILE": node_file, "PBS_ENVIRONMENT": "PBS_BATCH"}
        lsf = {"LSB_JOBID": "5511", "LSB_MCPU_HOSTS": f"{host} 1 127.0.0.2 1"}
        expected = (
            (pbs, f"PBS job 1742.pbs-server, node 0 of 2, hosts from PBS_NODEFILE={node_file}"),
            (lsf, f"LSF job 5511, node 0 of 2, hosts from LSB_MCPU_HOSTS={host} 1 127.0.0.2 1"),
        )
        for variables, line in expected:
            with self.subTest(line.split()[0]):
                self.assertEqual(self.job_line(variables), line)

    def test_no_job_line_outside_any_job_system(self):
        result = self.gangrun(["--dry-run", "--accelerator", "cpu", "--no_python", "true"],
                              env=harness.clean_env(), timeout=30)
        self.assertExit(result, 0)
        self.assertNotIn("  job:", result.stdout)


class DryRunOpensNoPort(GangrunTestCase):
    def test_no_bind_or_listen(self):
        strace = shutil.which("strace")
        if strace is None:
            self.skipTest("strace is not installed")
        trace = self.path("trace.txt")
        argv = [strace, "-f", "-qq", "-o", trace, "-e", "trace=bind,listen", "-e", "signal=none",
                harness.GANGRUN, "--dry-run", "--json", "--nproc_per_node", 2,
                *self.fake("--exit", 0)]
        env = harness.clean_env()
        if harness.SANITIZED:  # LeakSanitizer cannot work under ptrace
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        proc = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, timeout=60, cwd=self.tmp)
        if proc.returncode != 0 and b"ptrace" in proc.stderr:
            self.skipTest(f"strace cannot trace here: {proc.stderr[-200:]!r}")
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        json.loads(proc.stdout)
        with open(trace) as f:
            calls = [line.strip() for line in f if ("bind(" in line and "AF_INET" in line) or "listen(" in line]
        self.assertEqual(calls, [], "--dry-run touched the network")
        self.assert_nothing_started()


if __name__ == "__main__":
    harness.main()
