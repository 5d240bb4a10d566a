"""deepspeed and gangrun side by side: the same command line (program name swapped) with
the same probe script, compared per rank: the variables deepspeed sets for its workers,
the script's argv (--local_rank=N), the CPUs each worker may run on and OMP_NUM_THREADS
(--bind_cores_to_rank, through /proc/self/status), deepspeed.init_distributed()'s rank and
world size, the --enable_each_rank_log files, the --save_pid file and the exit outcome.

Both run with the same environment: HOME and the working directory in the test's
directory (each with a .deepspeed_env, which neither applies on one node), DS_ACCELERATOR=cpu
(deepspeed's CPU accelerator, needed on a machine without GPUs), and GANGRUN_ACCELERATOR=cpu
with GANGRUN_LAUNCH_STYLE=deepspeed, which deepspeed ignores and which give gangrun the same
meaning: --num_gpus N as N workers on the CPUs, and deepspeed's conventions (gangrun's
default is torchrun's). The only other difference in a line is the --master_port, a free
port for each run. Lines run in parallel to keep the test short."""

import concurrent.futures
import glob
import json
import os
import re
import subprocess
import time

import harness

# Variables deepspeed sets that must differ, with the reason.
EXCLUDED = {
    "MASTER_PORT": "each run is given its own free port",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "deepspeed/__init__.py sets it (setdefault) in every process "
                                     "that imports deepspeed, its launcher's among them; a "
                                     "worker that imports deepspeed sets it itself",
    "CUDA_VISIBLE_DEVICES": "deepspeed's CPU accelerator names made-up devices 0..N-1 in it; "
                            "gangrun on CPUs has no devices to name (with GPUs both name the "
                            "selected ones)",
}
PROBE = os.path.join(harness.HERE, "deepspeed_probe.py")
PEER_TIMEOUT = 240
RANK_LOG = re.compile(r"^\d{14}_rank(\d+)\.log$")


def probes(text):
    found = []
    for line in text.splitlines():
        at = line.find("DEEPSPEED_PROBE ")
        if at >= 0:
            found.append(json.loads(line[at + len("DEEPSPEED_PROBE "):]))
    return sorted(found, key=lambda p: int(p["env"].get("RANK", "0")))


class DeepspeedParity(harness.GangrunTestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_torch()
        harness.require_binaries()
        cls.deepspeed = harness.peer_tool("deepspeed")

    def environment(self):
        home = self.path("home")
        os.makedirs(home, exist_ok=True)
        for where in (home, self.tmp):
            with open(os.path.join(where, ".deepspeed_env"), "w") as f:
                f.write("DS_PARITY_FROM_ENV_FILE=1\n")
        bin_dir = os.path.dirname(harness.PEER_PYTHON)
        return harness.clean_env(HOME=home, DS_ACCELERATOR="cpu", GANGRUN_ACCELERATOR="cpu",
                                 GANGRUN_LAUNCH_STYLE="deepspeed", PYTHONDONTWRITEBYTECODE="1",
                                 PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))

    def run_one(self, program, name, args, env):
        """Runs one tool's line; returns (Result, probes, rank log names, pid)."""
        started = time.monotonic()
        log_dir = self.path(f"logs-{name}-{os.path.basename(program)}")
        line = [a.replace("LOGDIR", log_dir) for a in args]
        line = [str(harness.free_port()) if a == "PORT" else a for a in line]
        proc = subprocess.Popen([program, *line], env=env, cwd=self.tmp, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=PEER_TIMEOUT)
        result = harness.Result([program, *line], proc.returncode, out, err,
                                time.monotonic() - started)
        logs = sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []
        text = out + "".join(open(os.path.join(log_dir, n)).read() for n in logs)
        return result, probes(text), logs, proc.pid

    def run_both(self, name, args, env):
        return (self.run_one(self.deepspeed, name, args, env),
                self.run_one(harness.GANGRUN, name, args, env))

    def compare(self, name, peer, ours, env):
        (peer_result, peer_ranks, _, _), (our_result, our_ranks, _, _) = peer, ours
        where = f"line {name}" + peer_result.describe() + our_result.describe()
        self.assertEqual(peer_result.returncode, our_result.returncode, "exit code; " + where)
        self.assertEqual(len(peer_ranks), len(our_ranks), "process count; " + where)
        self.assertTrue(peer_ranks, "no worker printed its probe; " + where)
        for theirs, mine in zip(peer_ranks, our_ranks):
            self.assertEqual(theirs["argv"], mine["argv"], "argv; " + where)
            self.assertEqual(theirs["cpus"], mine["cpus"], "Cpus_allowed_list; " + where)
            self.assertEqual(theirs.get("dist"), mine.get("dist"), "init_distributed; " + where)
            set_by_peer = {k: v for k, v in theirs["env"].items()
                           if env.get(k) != v and k not in EXCLUDED}
            missing = {k: (v, mine["env"].get(k)) for k, v in set_by_peer.items()
                       if mine["env"].get(k) != v}
            self.assertEqual(missing, {}, "variables (deepspeed's, gangrun's); " + where)
            self.assertNotIn("DS_PARITY_FROM_ENV_FILE", mine["env"], where)
        return peer_ranks, our_ranks

    def test_lines_side_by_side(self):
        env = self.environment()
        lines = {
            "init": ["--num_gpus", "2", "--bind_cores_to_rank", "--bind_core_list", "0,1",
                     "--enable_each_rank_log", "LOGDIR", "--master_port", "PORT",
                     PROBE, "--init", "x"],
            "fail": ["--num_gpus", "2", "--no_local_rank", "--bind_cores_to_rank", "--save_pid",
                     "--master_port", "PORT", PROBE, "--fail-rank", "1"],
        }
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(lines)) as pool:
            futures = {name: pool.submit(self.run_both, name, args, env)
                       for name, args in lines.items()}
            results = {name: future.result() for name, future in futures.items()}

        with self.subTest(line="init"):
            peer, ours = results["init"]
            peer_ranks, our_ranks = self.compare("init", peer, ours, env)
            self.assertEqual([p["dist"] for p in our_ranks], [[0, 2], [1, 2]])
            self.assertEqual([p["cpus"] for p in our_ranks], ["0", "1"])
            self.assertEqual([p["env"]["OMP_NUM_THREADS"] for p in our_ranks], ["1", "1"])
            self.assertEqual(our_ranks[1]["argv"], ["--local_rank=1", "--init", "x"])
            for (result, _, logs, _) in (peer, ours):
                self.assertEqual([RANK_LOG.match(n).group(1) if RANK_LOG.match(n) else n
                                  for n in logs], ["0", "1"], result.describe())
                self.assertNotIn("DEEPSPEED_PROBE", result.stdout, result.describe())

        with self.subTest(line="fail"):
            peer, ours = results["fail"]
            peer_ranks, our_ranks = self.compare("fail", peer, ours, env)
            self.assertEqual(ours[0].returncode, 3)
            self.assertEqual(our_ranks[0]["argv"], ["--fail-rank", "1"])
            # Without --bind_core_list, deepspeed shares out cores 0..N-1 (N physical cores).
            self.assertEqual(len(our_ranks), 2)
            # deepspeed: /tmp/<deepspeed's pid>.deepspeed holds its launch.py's pid (an
            # ancestor of the worker); gangrun: /tmp/<its pid>.deepspeed holds its own.
            for (result, ranks, _, pid) in (peer, ours):
                files = ranks[0]["pid_files"]
                self.assertIn(str(pid), files, result.describe())
                self.assertIn(int(files[str(pid)]), ranks[0]["ancestors"], result.describe())
            # deepspeed leaves its file after a failure; gangrun removes its own.
            self.assertFalse(os.path.exists(f"/tmp/{ours[3]}.deepspeed"))
            if os.path.exists(f"/tmp/{peer[3]}.deepspeed"):
                os.remove(f"/tmp/{peer[3]}.deepspeed")

    def test_single_core_list(self):
        result = subprocess.run(
            [harness.GANGRUN, "--num_gpus", "1", "--bind_cores_to_rank", "--bind_core_list", "1",
             PROBE], env=self.environment(), cwd=self.tmp, capture_output=True, text=True,
            timeout=harness.EVENT_TIMEOUT)
        self.assertEqual(result.returncode, 0, result.stderr)
        (rank,) = probes(result.stdout)
        self.assertEqual(rank["cpus"], "1")
        self.assertEqual(rank["env"]["OMP_NUM_THREADS"], "1")
        self.assertEqual(rank["argv"], ["--local_rank=0"])

    def test_refused_and_misfit(self):
        env = self.environment()
        for args, expected in (
                (["--autotuning", "tune", PROBE], "--autotuning is not supported"),
                (["--num_gpus", "2", "--bind_cores_to_rank", "--bind_core_list", "1", PROBE],
                 "cannot give each of the 2 workers a core of its own")):
            result = subprocess.run([harness.GANGRUN, *args], env=env, cwd=self.tmp,
                                    capture_output=True, text=True, timeout=harness.EVENT_TIMEOUT)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(expected, result.stderr)


if __name__ == "__main__":
    harness.main()
