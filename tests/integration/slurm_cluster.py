"""A real Slurm cluster on this machine for integration tests: munged, slurmctld and N
slurmd (node1..nodeN, all at 127.0.0.1) run by scripts/slurm-cluster (read its header for
the configuration: two generic GPUs per node, requeue allowed, finished jobs kept in the
controller for 300 s, KillWait 5 s).

Starting and stopping take seconds, so a TestCase shares one cluster:

    class SlurmTests(harness.GangrunTestCase):
        @classmethod
        def setUpClass(cls):
            cls.cluster = slurm_cluster.Cluster.for_class(cls, nodes=3)   # skips with the reason

        def test_something(self):
            job = self.cluster.sbatch("#!/bin/bash\\n#SBATCH -N 3\\nsrun hostname\\n", cwd=self.tmp)
            end = self.cluster.wait_job_end(job)          # JobEnd(state, exit_code, signal, restarts)
            self.assertEqual((end.state, end.exit_code), ("COMPLETED", 0))
            print(self.cluster.job_output(job))
            self.assertEqual(self.cluster.leftover_processes(job), [])

The cluster's state directory is fresh, so job ids restart at the cluster's first id (drawn
from its port by scripts/slurm-cluster) in every cluster: give jobs the test's own directory (cwd=self.tmp), whose default output file slurm-ID.out is then
unique. The controller keeps a finished job for 300 s, long enough for wait_job_end and
job_output to read it; sacct knows nothing (no accounting database).

Every node is this machine, so a job's processes are found by their environment:
SLURM_CONF names this cluster's slurm.conf (slurmd passes it to every step and task) and
SLURM_JOB_ID the job.
"""

import functools
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from collections import namedtuple

import harness

SCRIPT = os.path.join(harness.REPO, "scripts", "slurm-cluster")

CLIENT_TOOLS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")
DAEMONS = ("munged", "slurmctld", "slurmd")

# Job states after which a job runs nothing more (squeue --states, scontrol JobState).
END_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
              "BOOT_FAIL", "DEADLINE"}

# scontrol's ExitCode=STATUS:SIGNAL of the batch script: 7:0 for `exit 7`, 0:15 for SIGTERM.
JobEnd = namedtuple("JobEnd", "state exit_code signal restarts")

# Ports base..base+nodes are drawn from this range, avoiding ports in use now.
_FIRST_PORT = 17000
_PORTS = 10000
_PROBE_TIMEOUT = 30


def _probe(argv, **kw):
    """None when ARGV succeeds, else what went wrong, in words."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=_PROBE_TIMEOUT, **kw)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{' '.join(argv)}: {error}"
    if done.returncode != 0:
        return f"{' '.join(argv)} failed ({done.returncode}): {done.stdout.decode(errors='replace').strip()[:200]}"
    return None


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _probe_munged(directory):
    """None when munged starts with a key and socket in DIRECTORY (then it is stopped)."""
    key = os.path.join(directory, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    pid_file = os.path.join(directory, "munged.pid")
    failure = _probe(["munged", "--force", f"--socket={directory}/munge.socket", f"--key-file={key}",
                      f"--pid-file={pid_file}", f"--log-file={directory}/munged.log",
                      f"--seed-file={directory}/munged.seed"])
    pid = _read_pid(pid_file)
    if pid is not None and _comm(pid) == "munged":
        # SIGKILL: the probe has nothing to save, and a SIGTERM sent this soon after the
        # start is sometimes lost (munged 0.5 then runs on until a second one).
        os.kill(pid, signal.SIGKILL)
        harness.wait_for(lambda: harness.is_dead(pid), harness.EVENT_TIMEOUT, "the probe munged to end")
    return failure


@functools.lru_cache(maxsize=None)
def skip_reason():
    """A string saying why a Slurm cluster cannot run here (not root, a tool missing, munged
    cannot start, no private mount namespace), or None when it can. It tries the primitives
    scripts/slurm-cluster uses, not the script, so that a fault in the script fails tests
    instead of skipping them. The answer is computed once per process."""
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root (munged, slurmd, mount namespaces)"
    for tool in (*DAEMONS, *CLIENT_TOOLS):
        if shutil.which(tool) is None:
            return f"a local Slurm cluster needs '{tool}' (Debian: slurm-wlm, munge)"
    for tool in ("unshare", "mount", "mknod"):
        if shutil.which(tool) is None:
            return f"a local Slurm cluster needs '{tool}' (Debian: util-linux, mount, coreutils)"
    directory = tempfile.mkdtemp(prefix="gangrun-slurm-probe-")
    try:
        failure = _probe_munged(directory)
        if failure:
            return f"munged cannot start: {failure}"
        hosts = os.path.join(directory, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n")
        failure = _probe(["unshare", "--mount", "--propagation", "private", "mount", "--bind", hosts, "/etc/hosts"])
        if failure:
            return f"cannot bind a hosts file in a private mount namespace: {failure}"
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return None


def _ports_free(base, count):
    for port in range(base, base + count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                return False
    return True


def _pick_port(nodes):
    rng = random.Random(f"{os.getpid()} {time.monotonic_ns()} slurm")
    while True:
        base = _FIRST_PORT + rng.randrange(_PORTS - nodes - 1)
        if _ports_free(base, nodes + 1):
            return base


def _environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return {}
    env = {}
    for entry in data.split(b"\0"):
        name, _, value = entry.partition(b"=")
        env[name.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _all_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


class Cluster:
    """NODES Slurm nodes, node1..nodeNODES, in a fresh temporary directory. start() and
    close() run scripts/slurm-cluster start and stop; both raise AssertionError on failure
    (close() also when a process of the cluster outlived stop, which it then kills by pid).
    Usable as a context manager; for a whole TestCase use for_class()."""

    def __init__(self, nodes=3, kill_wait=5):
        self.nodes = nodes
        self.kill_wait = kill_wait
        self.port = _pick_port(nodes)
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="gangrun-slurm-"))
        self.conf = os.path.join(self.dir, "slurm.conf")
        self._jobs_made = 0
        self._closed = False

    @classmethod
    def for_class(cls, test_class, nodes=3, kill_wait=5):
        """Skips TEST_CLASS (unittest.SkipTest) with skip_reason() when a cluster cannot run,
        else starts one whose close() is a class cleanup of TEST_CLASS (registered before
        the start, so that it runs even when the start fails), and returns it."""
        reason = skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cluster = cls(nodes, kill_wait)
        test_class.addClassCleanup(cluster.close)
        cluster.start()
        return cluster

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- the cluster

    def script(self, *args, timeout=2 * harness.EVENT_TIMEOUT):
        """Runs scripts/slurm-cluster ARGS DIR with this cluster's port; a harness.Result."""
        env = harness.clean_env(SLURM_CLUSTER_PORT=self.port, SLURM_CLUSTER_KILLWAIT=self.kill_wait)
        return self._run([SCRIPT, args[0], self.dir, *[str(a) for a in args[1:]]], timeout, env)

    def start(self):
        """Starts the daemons (idempotent); raises AssertionError when they do not come up."""
        result = self.script("start", self.nodes)
        if result.returncode != 0 or f"export SLURM_CONF={self.conf}" not in result.stdout:
            raise AssertionError("slurm-cluster start failed" + result.describe() + self._logs())

    def close(self):
        """Stops the cluster (its jobs first), checks that no process of it is left (killing
        any by pid) and removes its directory. Raises AssertionError when stop failed or a
        process was left. Idempotent."""
        if self._closed:
            return
        self._closed = True
        result = self.script("stop")
        leftovers = [pid for pid in self.processes() if not harness.is_dead(pid)]
        described = [harness.proc_describe(pid) for pid in leftovers]
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        problems = []
        if result.returncode != 0:
            problems.append("slurm-cluster stop failed" + result.describe() + self._logs())
        if described:
            problems.append("processes of the cluster outlived slurm-cluster stop (killed now):\n  "
                            + "\n  ".join(described))
        if not problems:
            shutil.rmtree(self.dir, ignore_errors=True)
        if problems:
            raise AssertionError("\n".join(problems))

    def env(self, **extra):
        """An environment for Slurm's client commands: harness.clean_env() (no SLURM_* from
        outside) with SLURM_CONF naming this cluster, plus EXTRA."""
        return harness.clean_env(SLURM_CONF=self.conf, **extra)

    def run(self, argv, timeout=harness.EVENT_TIMEOUT, env=None, cwd=None):
        """Runs a client command (srun, squeue, ...) with env() unless ENV; a harness.Result."""
        return self._run([str(a) for a in argv], timeout, env or self.env(), cwd)

    def processes(self):
        """Pids of every live process of this cluster: its daemons, job steps and tasks
        (all have SLURM_CONF naming its slurm.conf in their environment)."""
        return [pid for pid in _all_pids() if pid != os.getpid() and not harness.is_dead(pid)
                and _environ(pid).get("SLURM_CONF") == self.conf]

    # ---- jobs

    def sbatch(self, script, args=(), cwd=None, env=None):
        """Submits SCRIPT (a path, or the script's text when it holds a newline) with the
        extra sbatch ARGS, from CWD (default: a fresh directory under the cluster's), and
        returns the job id (an int). Raises AssertionError when sbatch fails."""
        if cwd is None:
            self._jobs_made += 1
            cwd = os.path.join(self.dir, "jobs", str(self._jobs_made))
            os.makedirs(cwd)
        if "\n" in script:
            handle, path = tempfile.mkstemp(prefix="job-", suffix=".sh", dir=cwd)
            with os.fdopen(handle, "w") as f:
                f.write(script)
            script = path
        result = self.run(["sbatch", "--parsable", *args, script], env=env, cwd=cwd)
        match = re.fullmatch(r"(\d+)(;\S+)?", result.stdout.strip())
        if result.returncode != 0 or not match:
            raise AssertionError("sbatch failed" + result.describe())
        return int(match.group(1))

    def job(self, job_id):
        """The fields of `scontrol show job -o JOB_ID` as a dict ({} when the controller no
        longer knows the job). For a heterogeneous job, the fields of its first component."""
        result = self.run(["scontrol", "show", "job", "-o", str(job_id)])
        if result.returncode != 0 or not result.stdout.strip():
            return {}
        fields = {}
        for word in result.stdout.splitlines()[0].split():
            name, sep, value = word.partition("=")
            if sep and name not in fields:
                fields[name] = value
        return fields

    def wait_job_state(self, job_id, states, timeout=harness.EVENT_TIMEOUT):
        """Waits until the job's JobState is one of STATES and returns its fields."""
        def reached():
            job = self.job(job_id)
            return job if job.get("JobState") in states else None
        return harness.wait_for(reached, timeout, f"job {job_id} to reach {sorted(states)}", interval=0.1)

    def wait_job_end(self, job_id, timeout=2 * harness.EVENT_TIMEOUT):
        """Waits until the job has ended and returns its JobEnd(state, exit_code, signal,
        restarts) from the controller. A job that is requeued and runs again has not ended."""
        job = self.wait_job_state(job_id, END_STATES, timeout)
        status, _, signal_number = job.get("ExitCode", "-1:-1").partition(":")
        return JobEnd(job["JobState"], int(status), int(signal_number or 0), int(job.get("Restarts", "0")))

    def job_output(self, job_id, stream="StdOut"):
        """What the job wrote so far to its output file (STREAM: StdOut or StdErr)."""
        path = self.job(job_id).get(stream)
        if not path:
            raise AssertionError(f"the controller names no {stream} for job {job_id}")
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def scancel(self, job_id, signal_name=None, batch_only=False):
        """scancel JOB_ID, with --signal=SIGNAL_NAME (e.g. "USR1") and --batch when asked."""
        argv = ["scancel", *([f"--signal={signal_name}"] if signal_name else []), *(["--batch"] if batch_only else []),
                str(job_id)]
        result = self.run(argv)
        if result.returncode != 0:
            raise AssertionError("scancel failed" + result.describe())

    def requeue(self, job_id):
        """scontrol requeue JOB_ID: the running batch job ends and runs again with
        SLURM_RESTART_COUNT one higher (after cred_expire, 10 s here)."""
        result = self.run(["scontrol", "requeue", str(job_id)])
        if result.returncode != 0:
            raise AssertionError("scontrol requeue failed" + result.describe())

    def leftover_processes(self, job_id):
        """Pids of the live processes of job JOB_ID of this cluster (SLURM_JOB_ID and
        SLURM_CONF in their environment): [] once the job and all it started are gone."""
        return [pid for pid in self.processes() if _environ(pid).get("SLURM_JOB_ID") == str(job_id)]

    # ---- helpers

    def _run(self, argv, timeout, env, cwd=None):
        start = time.monotonic()
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, timeout=timeout, env=env, cwd=cwd)
        except subprocess.TimeoutExpired as expired:
            return harness.Result(argv, None, expired.stdout or "", expired.stderr or "", time.monotonic() - start)
        return harness.Result(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def _logs(self, tail=1500):
        text = ""
        log_dir = os.path.join(self.dir, "log")
        for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
            with open(os.path.join(log_dir, name), errors="replace") as f:
                text += f"\n--- {name} (tail) ---\n{f.read()[-tail:]}"
        return text
