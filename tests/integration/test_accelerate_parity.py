"""accelerate launch and gangrun side by side: the same command line (program name
swapped) with the same probe script, compared per rank: the variables accelerate sets
for its workers, the script's argv, what accelerate.Accelerator() observes inside, the
number of processes and the exit outcome. Both run with HOME and HF_HOME in the test's
directory, so no user config of accelerate leaks in, and with the peer environment's
bin/ first on PATH, so that gangrun's python3 is the interpreter accelerate runs
(sys.executable); gangrun gets no extra option. Lines run in parallel, each with its
own port, to keep the test short."""

import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
import unittest

import harness

# Variables both tools set that must differ, with the reason.
EXCLUDED = {
    "TORCHELASTIC_ERROR_FILE": "a path in each launcher's own run directory",
    "TORCHELASTIC_RUN_ID": "torchrun's default is 'none'; gangrun names each run",
    "TORCHELASTIC_SIGNALS_TO_HANDLE": "torchrun 2.x tells its workers which signals its "
                                      "agent handles; gangrun handles them itself",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "not accelerate's launch code: importing deepspeed in "
                                     "accelerate's own process sets it (deepspeed/__init__.py), "
                                     "and a worker that imports deepspeed sets it the same way",
}
PROBE = os.path.join(harness.HERE, "accelerate_probe.py")
PEER_TIMEOUT = 240


def probes(text):
    found = []
    for line in text.splitlines():
        at = line.find("ACCELERATE_PROBE ")
        if at >= 0:
            found.append(json.loads(line[at + len("ACCELERATE_PROBE "):]))
    return sorted(found, key=lambda p: int(p["env"].get("RANK", "0")))


class AccelerateParity(harness.GangrunTestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_torch()
        harness.require_binaries()
        cls.accelerate = harness.peer_tool("accelerate")

    def environment(self):
        home = self.path("home")
        os.makedirs(home, exist_ok=True)
        bin_dir = os.path.dirname(harness.PEER_PYTHON)
        return harness.clean_env(HOME=home, HF_HOME=os.path.join(home, "hf"),
                                 PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
                                 DS_ACCELERATOR="cpu", PYTHONDONTWRITEBYTECODE="1")

    def run_both(self, args, env):
        def run(program):
            started = time.monotonic()
            command = [program, "launch"] if program == self.accelerate else [program]
            proc = subprocess.run([*command, *args], env=env, cwd=self.tmp, capture_output=True,
                                  text=True, timeout=PEER_TIMEOUT)
            return harness.Result([program, *args], proc.returncode, proc.stdout, proc.stderr,
                                  time.monotonic() - started)
        return run(self.accelerate), run(harness.GANGRUN)

    def compare(self, args, peer, ours, env):
        where = f"line {' '.join(args)}" + peer.describe() + ours.describe()
        self.assertEqual(peer.returncode, ours.returncode, where)
        peer_ranks, our_ranks = probes(peer.stdout), probes(ours.stdout)
        self.assertEqual(len(peer_ranks), len(our_ranks), "process count; " + where)
        self.assertTrue(peer_ranks, "no worker printed its probe; " + where)
        for theirs, mine in zip(peer_ranks, our_ranks):
            self.assertEqual(theirs["argv"], mine["argv"], where)
            self.assertEqual(theirs["state"], mine["state"], "Accelerator(); " + where)
            self.assertEqual(theirs["partial_state"], mine["partial_state"],
                             "PartialState; " + where)
            set_by_peer = {k: v for k, v in theirs["env"].items()
                           if env.get(k) != v and k not in EXCLUDED}
            missing = {k: (v, mine["env"].get(k)) for k, v in set_by_peer.items()
                       if mine["env"].get(k) != v}
            self.assertEqual(missing, {}, "variables (accelerate's, gangrun's); " + where)
        return peer_ranks

    def test_lines_side_by_side(self):
        env = self.environment()
        with open(self.path("cfg.yaml"), "w") as f:
            f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                    "num_machines: 1\nnum_processes: 2\nmixed_precision: bf16\nuse_cpu: true\n"
                    "machine_rank: 0\ndebug: false\n")
        lines = [
            ["--cpu", "--num_processes", "2", "--mixed_precision", "bf16",
             "--num_cpu_threads_per_process", "3", "--dynamo_backend", "inductor"],
            ["--multi_gpu", "--num_processes", "2", "--mixed_precision", "bf16", "--debug",
             "--dynamo_use_fullgraph"],
            ["--use_fsdp", "--num_processes", "2", "--fsdp_offload_params", "true",
             "--fsdp_auto_wrap_policy", "NO_WRAP"],
            ["--use_deepspeed", "--num_processes", "2", "--zero_stage", "2",
             "--gradient_accumulation_steps", "2"],
            ["--config_file", self.path("cfg.yaml")],
        ]
        runs = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(lines)) as pool:
            for args in lines:
                port = harness.free_port()
                full = [*args, "--main_process_port", str(port), PROBE, "a", "--b=1"]
                runs[tuple(full)] = pool.submit(self.run_both, full, env)
        results = {line: future.result() for line, future in runs.items()}
        counts = {}
        for line, (peer, ours) in results.items():
            with self.subTest(line=" ".join(line[:4])):
                counts[line[0]] = len(self.compare(list(line), peer, ours, env))
        # accelerate's --cpu and a MULTI_CPU config run one process; the others two.
        self.assertEqual(counts.get("--cpu"), 1, counts)
        self.assertEqual(counts.get("--config_file"), 1, counts)
        self.assertEqual(counts.get("--multi_gpu"), 2, counts)

    def test_num_processes_without_a_mode(self):
        """--num_processes 2 without --multi_gpu, --cpu or a config file, no GPU visible:
        accelerate launch starts one plain process; gangrun starts both as one multi-CPU
        job that accelerate's state joins (one main process), and says so in one line."""
        env = dict(self.environment(), CUDA_VISIBLE_DEVICES="")
        args = ["--num_processes=2", PROBE]
        peer, ours = self.run_both(args, env)
        where = f"line {' '.join(args)}" + peer.describe() + ours.describe()
        self.assertEqual((peer.returncode, ours.returncode), (0, 0), where)
        theirs, mine = probes(peer.stdout), probes(ours.stdout)
        self.assertEqual([p["partial_state"] for p in theirs],
                         [{"distributed_type": "DistributedType.NO", "num_processes": 1,
                           "process_index": 0, "is_main_process": True}], where)
        states = [p["partial_state"] for p in mine]
        self.assertEqual([(s["distributed_type"], s["num_processes"], s["process_index"])
                          for s in states],
                         [("DistributedType.MULTI_CPU", 2, 0), ("DistributedType.MULTI_CPU", 2, 1)],
                         where)
        self.assertEqual(sum(s["is_main_process"] for s in states), 1, where)
        self.assertEqual([p["state"]["is_main_process"] for p in mine], [True, False], where)
        # accelerate's variables reach gangrun's workers, but the two that make one job
        # of them: ACCELERATE_USE_CPU (False for accelerate's one plain process) and the
        # port (accelerate's fixed 29500; gangrun's a free one).
        differ = {"ACCELERATE_USE_CPU", "MASTER_PORT"}
        set_by_peer = {k: v for k, v in theirs[0]["env"].items()
                       if env.get(k) != v and k not in EXCLUDED and k not in differ}
        self.assertIn("ACCELERATE_MIXED_PRECISION", set_by_peer, where)
        for rank in mine:
            missing = {k: (v, rank["env"].get(k)) for k, v in set_by_peer.items()
                       if rank["env"].get(k) != v}
            self.assertEqual(missing, {}, "variables (accelerate's, gangrun's); " + where)
            self.assertEqual(rank["env"].get("ACCELERATE_USE_CPU"), "True", where)
        notices = [line for line in ours.stderr.splitlines()
                   if "without --multi_gpu or --cpu" in line]
        self.assertEqual(len(notices), 1, where)
        self.assertIn("--num_processes", notices[0])
        self.assertIn("multi-CPU job (accelerate launch would start 1", notices[0])

    def test_num_processes_in_a_config_file_without_a_mode(self):
        """A config file with distributed_type NO and num_processes 2: accelerate launch runs
        one process on any machine, and so does gangrun."""
        env = dict(self.environment(), CUDA_VISIBLE_DEVICES="")
        with open(self.path("no.yaml"), "w") as f:
            f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\n"
                    "num_machines: 1\nnum_processes: 2\nmixed_precision: 'no'\n"
                    "machine_rank: 0\n")
        args = ["--config_file", self.path("no.yaml"), "--main_process_port",
                str(harness.free_port()), PROBE]
        peer, ours = self.run_both(args, env)
        self.assertEqual(len(self.compare(args, peer, ours, env)), 1)
        self.assertNotIn("without --multi_gpu or --cpu", ours.stderr)

    def test_port_in_use(self):
        """A taken --main_process_port: on one machine accelerate launch moves to a free port
        and says so, and gangrun too; as the first of two machines accelerate stops, and
        gangrun too (its exit code 3). Each message names --main_process_port, as typed."""
        env = self.environment()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
            held.bind(("127.0.0.1", 0))
            held.listen()
            port = str(held.getsockname()[1])
            one = ["--multi_gpu", "--num_processes", "2", "--main_process_port", port, PROBE]
            two = ["--multi_gpu", "--num_processes", "2", "--num_machines", "2", "--machine_rank",
                   "0", "--main_process_ip", "127.0.0.1", "--main_process_port", port, PROBE]
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
                runs = [pool.submit(self.run_both, args, env) for args in (one, two)]
                (peer, ours), (peer2, ours2) = [run.result() for run in runs]

        where = f"line {' '.join(one)}" + peer.describe() + ours.describe()
        self.assertEqual((peer.returncode, ours.returncode), (0, 0), where)
        for result in (peer, ours):
            self.assertIn("--main_process_port", result.stderr, where)
            ranks = probes(result.stdout)
            self.assertEqual(len(ranks), 2, where)
            moved_to = {rank["env"]["MASTER_PORT"] for rank in ranks}
            self.assertEqual(len(moved_to), 1, where)
            self.assertNotIn(port, moved_to, where)
        self.assertIn(f"--main_process_port {port}", ours.stderr, where)
        self.assertNotIn("--master_port", ours.stderr, where)

        where = f"line {' '.join(two)}" + peer2.describe() + ours2.describe()
        self.assertNotEqual(peer2.returncode, 0, where)
        self.assertEqual(ours2.returncode, 3, where)
        self.assertEqual(probes(peer2.stdout) + probes(ours2.stdout), [], where)
        for result in (peer2, ours2):
            self.assertIn("--main_process_port", result.stderr, where)
        self.assertNotIn("--master_port", ours2.stderr, where)

    def test_refused_flag(self):
        result = subprocess.run([harness.GANGRUN, "--tpu", PROBE], env=self.environment(),
                                capture_output=True, text=True, timeout=harness.EVENT_TIMEOUT)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--tpu: gangrun cannot honour it", result.stderr)
        self.assertIn("use accelerate launch for TPUs", result.stderr)


if __name__ == "__main__":
    harness.main()
