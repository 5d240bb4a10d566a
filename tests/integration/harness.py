"""Shared harness of gangrun's integration tests.

Every test_*.py in this directory is a plain unittest script run by ctest with
GANGRUN_BIN, FAKE_WORKER and GANGRUN_TEST_PYTHON in its environment
(tests/CMakeLists.txt). Exit code 77 means "skipped".

Rules every test keeps:
- every wait has a timeout;
- only loopback is bound;
- only processes the test caused are ended, by pid, and only after checking that the
  pid still belongs to this test (its command line names the test's private directory);
- nothing survives a test: tearDown kills what is left and fails loudly if it had to.

What we expect of gangrun's JSON documents (--dry-run --json, --report) lives in the
SCHEMA section below and nowhere else, so a schema change is a one-place edit.
"""

import errno
import fcntl
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

GANGRUN = os.environ.get("GANGRUN_BIN", os.path.join(REPO, "build", "app", "gangrun"))
FAKE = os.environ.get("FAKE_WORKER", os.path.join(REPO, "build", "tests", "fake_worker"))
TEST_PYTHON = os.environ.get("GANGRUN_TEST_PYTHON", "/usr/bin/python3")
# PyTorch 2.x with the peer launchers (accelerate, deepspeed) beside it in its bin/.
PEER_PYTHON = os.environ.get("GANGRUN_TEST_PEER_PYTHON",
                             os.path.join(REPO, ".venv-torch2", "bin", "python"))

SKIP = 77

# How long a test waits for an event that should come (a file, a line, a pid's end)
# before it fails. Only a hang should ever reach it: a loaded machine or a sanitizer
# build makes everything several times slower, and no test passes or fails on speed.
EVENT_TIMEOUT = 60

# Set for the sanitize.* runs (tests/CMakeLists.txt): gangrun is built with ASan+UBSan.
SANITIZED = os.environ.get("GANGRUN_TEST_SANITIZED") == "1"
# Set ("thread") by scripts/tsan: gangrun is built with ThreadSanitizer.
THREAD_SANITIZED = os.environ.get("GANGRUN_TEST_SANITIZED") == "thread"


def asan_quarantine_kib():
    """The freed memory ASan holds back before reusing it (its quarantine_size_mb, 256 MiB
    unless ASAN_OPTIONS says otherwise): it stays resident, so a limit must leave room."""
    match = re.search(r"(?:^|:)quarantine_size_mb=(\d+)", os.environ.get("ASAN_OPTIONS", ""))
    return (int(match.group(1)) if match else 256) * 1024


def rss_limit_kib(kib):
    """KIB, a test's limit on the resident memory of a gangrun process; in a sanitized run
    twice that plus 64 MiB, for ASan's shadow memory and redzones, plus its quarantine of
    freed memory (a server that makes and frees big replies fills it); under
    ThreadSanitizer four times that plus 64 MiB, for its shadow memory (several bytes
    per byte the program touches) and the metadata of every allocation."""
    if THREAD_SANITIZED:
        return 4 * kib + 64 * 1024
    return 2 * kib + 64 * 1024 + asan_quarantine_kib() if SANITIZED else kib


def per_object_limit(size):
    """SIZE, a test's limit on the memory one object (an idle connection) costs gangrun;
    twice that under ThreadSanitizer, whose allocator keeps metadata beside every block.
    ASan's cost fits in SIZE, so its runs keep the plain limit."""
    return 2 * size if THREAD_SANITIZED else size


# No core files from workers that die by signal on purpose.
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def require_binaries():
    """Exit 77 (skip) with a reason when the built binaries are not there."""
    for what, path in (("GANGRUN_BIN", GANGRUN), ("FAKE_WORKER", FAKE)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print(f"SKIP: {what} is not an executable file: {path}", file=sys.stderr)
            sys.exit(SKIP)


def require_torch():
    """Skips the calling test (unittest.SkipTest, with the reason) when GANGRUN_TEST_PYTHON
    cannot import torch, or when GANGRUN_TEST_NO_TORCH is set (the sanitizer runs, which
    check gangrun, not PyTorch). main() turns a script whose every test skipped into 77."""
    if os.environ.get("GANGRUN_TEST_NO_TORCH"):
        raise unittest.SkipTest("GANGRUN_TEST_NO_TORCH is set: tests with PyTorch are not run here")
    try:
        subprocess.run([TEST_PYTHON, "-c", "import torch.distributed"], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        raise unittest.SkipTest(f"{TEST_PYTHON} cannot import torch.distributed ({error})")


def peer_tool(name):
    """The path of a peer launcher (accelerate, deepspeed, torchrun) installed beside
    PEER_PYTHON; skips the calling test (with the reason) when it is not there, or when
    GANGRUN_TEST_NO_TORCH is set."""
    if os.environ.get("GANGRUN_TEST_NO_TORCH"):
        raise unittest.SkipTest("GANGRUN_TEST_NO_TORCH is set: the peer launchers are not run here")
    path = os.path.join(os.path.dirname(PEER_PYTHON), name)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"{name} is not installed beside {PEER_PYTHON} (scripts/install-deps)")
    return path


def run_tool(argv, timeout=240, env=None, check=True, **kwargs):
    """Runs a tool's ARGV to completion with text output (stdin closed) and returns the
    CompletedProcess; raises AssertionError with its output when CHECK and it fails, and when
    it does not finish within TIMEOUT seconds."""
    try:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=timeout, env=env, **kwargs)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"{' '.join(argv)} did not finish within {timeout}s:\n"
                             f"{error.stdout}\n{error.stderr}") from None
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}\n--- stdout ---\n"
                             f"{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}")
    return result


def skip_script(reason):
    """Exit 77 (ctest's skip) with REASON, for a script that cannot run here at all."""
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(SKIP)


def main():
    """unittest main: exits 1 on any failure, 77 (ctest's skip) when every test skipped or
    the binaries are missing, else 0. Skipped tests and their reasons are in the output."""
    require_binaries()
    program = unittest.main(verbosity=2, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun > 0 and len(result.skipped) == result.testsRun:
        print(f"SKIP: all {result.testsRun} tests skipped", file=sys.stderr)
        sys.exit(SKIP)
    sys.exit(0)


# ============================================================================
# SCHEMA: what the tests assume about gangrun's JSON documents. Change it here.
# ============================================================================

# The variables gangrun sets for every worker (docs/environment.md, "What each worker gets"),
# besides the accelerator visibility variables (docs/devices.md, "Accelerators").
WORKER_VARIABLES = (
    "LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
    "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING",
)
# Set only in some cases (OMP_NUM_THREADS: unset in gangrun's env and >1 local worker).
CONDITIONAL_WORKER_VARIABLES = ("OMP_NUM_THREADS",)
# Visibility variables gangrun may set; no test here selects devices.
VISIBILITY_VARIABLES = (
    "CUDA_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
)
# gangrun hosts the store its workers meet through (docs/store.md, "The TCP store").
EXPECTED_USE_AGENT_STORE = "True"

# --dry-run --json: {"workers": [{"rank", "local_rank", "argv": [...], "env": {...}}, ...]}
DRY_RUN_WORKERS_KEY = "workers"
DRY_RUN_RANK_KEY = "rank"
DRY_RUN_LOCAL_RANK_KEY = "local_rank"
DRY_RUN_ARGV_KEY = "argv"
DRY_RUN_ENV_KEY = "env"


def dry_run_workers(doc):
    """Normalised workers of a --dry-run --json document, sorted by rank:
    [{"rank": int, "local_rank": int, "argv": [str], "env": {str: str}}]."""
    assert isinstance(doc, dict), f"--dry-run --json: top level is not an object: {doc!r:.300}"
    assert DRY_RUN_WORKERS_KEY in doc, f"--dry-run --json: no '{DRY_RUN_WORKERS_KEY}' in {sorted(doc)}"
    workers = []
    for entry in doc[DRY_RUN_WORKERS_KEY]:
        for key in (DRY_RUN_RANK_KEY, DRY_RUN_LOCAL_RANK_KEY, DRY_RUN_ARGV_KEY, DRY_RUN_ENV_KEY):
            assert key in entry, f"--dry-run --json: worker lacks '{key}': {sorted(entry)}"
        argv, env = entry[DRY_RUN_ARGV_KEY], entry[DRY_RUN_ENV_KEY]
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), f"argv: {argv!r}"
        assert isinstance(env, dict), f"env is not an object: {env!r:.300}"
        workers.append({
            "rank": int(entry[DRY_RUN_RANK_KEY]),
            "local_rank": int(entry[DRY_RUN_LOCAL_RANK_KEY]),
            "argv": argv,
            "env": {str(k): str(v) for k, v in env.items()},
        })
    return sorted(workers, key=lambda w: w["rank"])


# --report FILE (lib/report/run_report.hpp, schema version 1):
# {"version": 1, "exit_code", "restarts": attempts - 1,
#  "attempts": [{"attempt", "root_cause": {"rank", "local_rank"}|null, "workers": [WORKER...]}],
#  "root_cause": the last attempt's root-cause WORKER (plus "attempt"), or null}
# WORKER = {"rank", "local_rank", "pid", "exit_code": int|null, "signal": name|null,
#           "started_at", "ended_at", "peak_rss_kib", "stopped_by_gangrun",
#           "ended": how it ended, in words,
#           "error": {"message", "traceback"|null, "timestamp"|null}|null (root cause only),
#           "error_file": path|null (null when the run directory was temporary), ...}
REPORT_ROOT_CAUSE_KEY = "root_cause"
REPORT_ERROR_KEY = "error"
REPORT_ERROR_FILE_KEY = "error_file"
REPORT_ENDED_KEY = "ended"
REPORT_RESTARTS_KEY = "restarts"
REPORT_ATTEMPTS_KEY = "attempts"
REPORT_WORKERS_KEY = "workers"
REPORT_WORKER_KEYS = {  # our name -> gangrun's key
    "rank": "rank",
    "local_rank": "local_rank",
    "pid": "pid",
    "exit_code": "exit_code",
    "signal": "signal",
    "start": "started_at",
    "end": "ended_at",
    "peak_rss": "peak_rss_kib",
}
REPORT_PEAK_RSS_BYTES_PER_UNIT = 1024  # peak_rss_kib is in KiB


def _report_worker(entry):
    missing = [theirs for theirs in REPORT_WORKER_KEYS.values() if theirs not in entry]
    assert not missing, f"--report: worker lacks {missing}: {json.dumps(entry)[:400]}"
    return {ours: entry[theirs] for ours, theirs in REPORT_WORKER_KEYS.items()}


def report_attempts(doc):
    """[[worker, ...] per attempt] with our key names."""
    if REPORT_ATTEMPTS_KEY in doc:
        return [[_report_worker(w) for w in attempt[REPORT_WORKERS_KEY]] for attempt in doc[REPORT_ATTEMPTS_KEY]]
    assert REPORT_WORKERS_KEY in doc, f"--report: neither '{REPORT_ATTEMPTS_KEY}' nor '{REPORT_WORKERS_KEY}' in {sorted(doc)}"
    return [[_report_worker(w) for w in doc[REPORT_WORKERS_KEY]]]


def report_root_cause(doc):
    """The root-cause object (with at least "rank"), or None."""
    assert REPORT_ROOT_CAUSE_KEY in doc, f"--report: no '{REPORT_ROOT_CAUSE_KEY}' in {sorted(doc)}"
    return doc[REPORT_ROOT_CAUSE_KEY]


def report_restarts(doc):
    assert REPORT_RESTARTS_KEY in doc, f"--report: no '{REPORT_RESTARTS_KEY}' in {sorted(doc)}"
    return int(doc[REPORT_RESTARTS_KEY])


# ============================================================================
# environment and processes
# ============================================================================

_LAUNCHER_PREFIXES = ("PET_", "GANGRUN_", "TORCHELASTIC_", "SLURM_", "OMPI_", "PMI_", "PBS_", "LSB_", "SKYPILOT_",
                      "KUBERNETES_")
_LAUNCHER_NAMES = set(WORKER_VARIABLES) | {
    "OMP_NUM_THREADS", "PYTHON_EXEC", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE",
    "CUDA_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
}


# The job secret the multi-node tests give every agent, as users are told to
# (GANGRUN_JOB_SECRET authenticates the rendezvous).
TEST_JOB_SECRET = "gangrun-test-job-secret-0123456789abcdef"


def private_tmpfs_mount(test, directory, label):
    """The shell command that mounts a 64 KiB tmpfs (a disk that fills at once) on $1, in the
    private mount namespace of an `unshare -m --propagation private sh -c COMMAND sh DIRECTORY`;
    skips TEST where this machine cannot."""
    mount = f'mount -t tmpfs -o size=64k {label} "$1"'
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh", directory],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=EVENT_TIMEOUT)
    if probe.returncode != 0:
        test.skipTest(f"cannot mount a tmpfs in a private mount namespace: {probe.stderr.decode()[-300:]!r}")
    return mount


def clean_env(**extra):
    """os.environ without anything a launcher would read or set, plus EXTRA."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(_LAUNCHER_PREFIXES) and k not in _LAUNCHER_NAMES}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def proc_state(pid):
    """The state letter of /proc/PID/stat ('T' stopped, 'S' sleeping, 'Z' a zombie, ...), or
    None when PID is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) S ..." where comm may contain spaces or parentheses
    return stat[stat.rindex(")") + 2:].split()[0]


def is_dead(pid):
    """True when PID is gone or a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return proc_state(pid) in (None, "Z", "X")


def pending_signals(pid):
    """The signals pending for the whole of process PID (ShdPnd in /proc/PID/status: what a
    kill or killpg left there while it was stopped or blocking them), as a set of numbers."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("ShdPnd:"):
                mask = int(line.split()[1], 16)
                return {bit + 1 for bit in range(64) if mask & (1 << bit)}
    return set()


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def proc_describe(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read().strip()
    except OSError:
        stat = "(gone)"
    return f"pid {pid}: {stat[:120]} cmd={proc_cmdline(pid)[:160]!r}"


def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def wait_for(predicate, timeout, what, interval=0.02):
    """Polls PREDICATE until it returns something truthy; fails after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# Ports for the servers tests start come from below the kernel's ephemeral range: a port
# the kernel handed out (port 0) was soon handed out again to some outgoing connection (a
# gloo mesh, another test's client), and the server's bind then failed with EADDRINUSE.
# The range also stays clear of the Slurm cluster's ports (17000-26999) and of gangrun's
# store ports under Slurm (20000-31999). A lock file per port, held until this process
# exits, keeps the test processes ctest runs side by side from taking the same one.
_TEST_PORTS = range(10000, 17000)
_PORT_LOCKS = os.path.join(tempfile.gettempdir(), "gangrun-test-ports")
_held_port_locks = []


def _ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(n) for n in f.read().split())
        return range(low, high + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def _bindable(port):
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((address, port))
            except OSError as error:
                if family == socket.AF_INET6 and error.errno == errno.EAFNOSUPPORT:
                    continue
                return False
    return True


def _reserve(port):
    os.makedirs(_PORT_LOCKS, exist_ok=True)
    fd = os.open(os.path.join(_PORT_LOCKS, str(port)), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held_port_locks.append(fd)
    return True


def free_port():
    """A port no other test process holds, free on every address a moment ago, and one
    the kernel never gives an outgoing connection."""
    ephemeral = _ephemeral_ports()
    candidates = [p for p in _TEST_PORTS if p not in ephemeral]
    random.Random(f"{os.getpid()} {time.monotonic_ns()}").shuffle(candidates)
    for port in candidates:
        if _reserve(port):
            if _bindable(port):
                return port
            os.close(_held_port_locks.pop())
    raise RuntimeError(f"no free test port in {_TEST_PORTS.start}-{_TEST_PORTS.stop - 1}")


class Result:
    def __init__(self, argv, returncode, stdout, stderr, elapsed):
        self.argv, self.returncode, self.stdout, self.stderr, self.elapsed = argv, returncode, stdout, stderr, elapsed

    def describe(self, tail=3000):
        out = self.stdout if isinstance(self.stdout, str) else self.stdout[-tail:].decode(errors="replace")
        err = self.stderr if isinstance(self.stderr, str) else self.stderr[-tail:].decode(errors="replace")
        return (f"\n$ {' '.join(self.argv)}\nreturncode={self.returncode} elapsed={self.elapsed:.2f}s\n"
                f"--- stdout (tail) ---\n{out[-tail:]}\n--- stderr (tail) ---\n{err[-tail:]}")


class GangrunTestCase(unittest.TestCase):
    """A private directory per test, a pid directory for fake workers, and cleanup."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gangrun-it-")
        self.pid_dir = os.path.join(self.tmp, "pids")
        os.mkdir(self.pid_dir)
        self._started = []  # Popen objects of gangrun we started
        self._stopped = []  # pids of workers the test stopped (stop_worker)

    # Tests that end gangrun with SIGKILL may leave setsid'd grandchildren to init.
    allow_leftovers = False

    def tearDown(self):
        # A worker the test stopped runs again first, so that whatever ends it is not kept
        # waiting (a stopped process acts on no signal but SIGKILL and SIGCONT).
        for pid in self._stopped:
            if not is_dead(pid) and self.tmp in proc_cmdline(pid):
                os.kill(pid, signal.SIGCONT)
        leftovers = []
        for proc in self._started:
            if proc.poll() is None:
                leftovers.append(f"gangrun pid {proc.pid} still running")
                proc.kill()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        mine = [p for p in self.recorded_pids() if self.tmp in proc_cmdline(p)]
        deadline = time.monotonic() + (0 if self.allow_leftovers else EVENT_TIMEOUT)
        while any(not is_dead(p) for p in mine) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in mine:
            if not is_dead(pid) and self.tmp in proc_cmdline(pid):
                leftovers.append(proc_describe(pid))
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        if leftovers and not self.allow_leftovers:
            raise AssertionError("processes of the job outlived gangrun (killed by the test now):\n  "
                                 + "\n  ".join(leftovers))

    # ---- paths and commands

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def fake(self, *actions):
        """argv of a fake worker that records its pid in the test's pid directory."""
        return [FAKE, "--pid-dir", self.pid_dir, *[str(a) for a in actions]]

    def ready_file(self):
        return self.path("ready.{rank}")

    # ---- pids the workers recorded

    def recorded_pids(self):
        try:
            with open(os.path.join(self.pid_dir, "all.pids")) as f:
                return [int(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def pid_files(self, stem="worker"):
        """{rank: pid} from DIR/<stem>.<rank>.pid."""
        pids = {}
        for name in os.listdir(self.pid_dir):
            m = re.fullmatch(re.escape(stem) + r"\.(\w+)\.pid", name)
            if m:
                with open(os.path.join(self.pid_dir, name)) as f:
                    pids[int(m.group(1))] = int(f.read())
        return pids

    def wait_pid_files(self, count, stem="worker", timeout=EVENT_TIMEOUT):
        def enough():
            pids = self.pid_files(stem)
            return pids if len(pids) >= count else None
        return wait_for(enough, timeout, f"{count} {stem} pid files in {self.pid_dir}")

    def wait_ready(self, count, timeout=EVENT_TIMEOUT):
        def ready():
            names = [n for n in os.listdir(self.tmp) if n.startswith("ready.")]
            return len(names) >= count
        wait_for(ready, timeout, f"{count} workers to be ready")

    def stop_worker(self, pid):
        """Stops PID, a worker of this test (it recorded its pid), with SIGSTOP, as a debugger or a
        scheduler suspending the job would, and waits until it is stopped; tearDown continues it
        if it is still there."""
        self.assertIn(self.tmp, proc_cmdline(pid), f"pid {pid} is not a worker of this test")
        os.kill(pid, signal.SIGSTOP)
        self._stopped.append(pid)
        wait_for(lambda: proc_state(pid) in ("T", None), EVENT_TIMEOUT, f"pid {pid} to stop")
        self.assertEqual(proc_state(pid), "T", f"pid {pid} ended instead of stopping")

    def assert_dead(self, pids, timeout=EVENT_TIMEOUT, what="processes"):
        pids = list(pids)
        deadline = time.monotonic() + timeout
        while True:
            alive = [p for p in pids if not is_dead(p)]
            if not alive:
                return
            if time.monotonic() > deadline:
                self.fail(f"{what} still alive {timeout}s later:\n  " + "\n  ".join(proc_describe(p) for p in alive))
            time.sleep(0.02)

    def assert_nothing_started(self):
        self.assertEqual(self.recorded_pids(), [], "a worker was started although gangrun should start nothing")

    # ---- running gangrun

    def gangrun(self, args, timeout=2 * EVENT_TIMEOUT, env=None, binary_output=False, cwd=None,
                preexec_fn=None):
        """Runs gangrun to completion; fails the test (killing it) after TIMEOUT seconds."""
        argv = [GANGRUN, *[str(a) for a in args]]
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=clean_env() if env is None else env, start_new_session=True,
                                cwd=cwd or self.tmp, preexec_fn=preexec_fn)
        self._started.append(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=30)
            result = Result(argv, None, out, err, time.monotonic() - start)
            self.fail(f"gangrun did not finish within {timeout}s" + result.describe())
        if not binary_output:
            out, err = out.decode(errors="replace"), err.decode(errors="replace")
        return Result(argv, proc.returncode, out, err, time.monotonic() - start)

    def start(self, args, env=None, preexec_fn=None):
        """Starts gangrun in its own session with stdout/stderr going to files."""
        argv = [GANGRUN, *[str(a) for a in args]]
        n = len(self._started)
        out = open(self.path(f"gangrun.{n}.out"), "wb")
        err = open(self.path(f"gangrun.{n}.err"), "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=clean_env() if env is None else env, start_new_session=True, cwd=self.tmp,
                                preexec_fn=preexec_fn)
        out.close()
        err.close()
        proc.argv, proc.index, proc.t0 = argv, n, time.monotonic()
        self._started.append(proc)
        return proc

    def finish(self, proc, timeout=2 * EVENT_TIMEOUT):
        """Waits for a started gangrun; fails (killing it) after TIMEOUT seconds."""
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
            self.fail(f"gangrun did not finish within {timeout}s" + self._started_result(proc).describe())
        return self._started_result(proc)

    def stderr_of(self, proc):
        """What a started gangrun has written to stderr so far."""
        with open(self.path(f"gangrun.{proc.index}.err"), errors="replace") as f:
            return f.read()

    def wait_stderr(self, proc, text):
        """Waits for TEXT in a started gangrun's stderr; fails if it ends without it."""
        wait_for(lambda: text in self.stderr_of(proc) or proc.poll() is not None, EVENT_TIMEOUT,
                 f"{text!r} in the stderr of gangrun {proc.index}")
        self.assertIn(text, self.stderr_of(proc), f"gangrun {proc.index} ended first: {self.stderr_of(proc)}")

    def _started_result(self, proc):
        with open(self.path(f"gangrun.{proc.index}.out"), errors="replace") as f:
            out = f.read()
        with open(self.path(f"gangrun.{proc.index}.err"), errors="replace") as f:
            err = f.read()
        return Result(proc.argv, proc.returncode, out, err, time.monotonic() - proc.t0)

    # ---- assertions on results

    def assertExit(self, result, code):
        self.assertEqual(result.returncode, code, f"expected exit {code}" + result.describe())

    def read_json(self, path):
        with open(path) as f:
            return json.load(f)

    def env_of_ranks(self, count):
        """The environment each of COUNT fake workers wrote with --print-env env.{rank}.json."""
        return {rank: self.read_json(self.path(f"env.{rank}.json"))["env"] for rank in range(count)}

    def dry_run(self, args, env=None):
        """Runs gangrun --dry-run --json ARGS and returns the normalised worker list."""
        result = self.gangrun(["--dry-run", "--json", *args], env=env, timeout=30)
        self.assertExit(result, 0)
        try:
            doc = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            self.fail(f"--dry-run --json did not print JSON on stdout: {error}" + result.describe())
        return dry_run_workers(doc)


def prefixed_lines(text, rank):
    """The lines of TEXT that carry the default prefix of RANK, without the prefix."""
    prefix = f"[rank{rank}]: "
    return [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]


def dash(option):
    """--nproc_per_node -> --nproc-per-node"""
    return "--" + option[2:].replace("_", "-")


def option_named(text, option):
    """True when TEXT names OPTION (given as --snake_name) in either spelling."""
    bare = option.lstrip("-")
    return bare in text or bare.replace("_", "-") in text


# ============================================================================
# the worker environment contract (docs/environment.md, "What each worker gets"), shared by the fake-worker
# and the real-torch tests
# ============================================================================

def expected_worker_env(*, rank, local_rank, node_rank=0, nnodes=1, nproc_per_node, restart=0, max_restarts=0,
                        run_id="none", role="default", master_addr="127.0.0.1", master_port=None,
                        launcher_env=None):
    """The exact values a worker must see, given gangrun's own environment LAUNCHER_ENV.
    MASTER_PORT is included only when MASTER_PORT is given; TORCHELASTIC_ERROR_FILE never
    (check_worker_env checks it separately)."""
    launcher_env = launcher_env or {}
    world = nnodes * nproc_per_node
    expected = {
        "LOCAL_RANK": str(local_rank),
        "RANK": str(rank),
        "GROUP_RANK": str(node_rank),
        "ROLE_RANK": str(rank),
        "ROLE_NAME": role,
        "LOCAL_WORLD_SIZE": str(nproc_per_node),
        "WORLD_SIZE": str(world),
        "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_WORLD_SIZE": str(world),
        "MASTER_ADDR": master_addr,
        "TORCHELASTIC_RESTART_COUNT": str(restart),
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_USE_AGENT_STORE": EXPECTED_USE_AGENT_STORE,
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": launcher_env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "NCCL_ASYNC_ERROR_HANDLING": launcher_env.get("NCCL_ASYNC_ERROR_HANDLING", "1"),
    }
    if master_port is not None:
        expected["MASTER_PORT"] = str(master_port)
    if "OMP_NUM_THREADS" in launcher_env:
        expected["OMP_NUM_THREADS"] = launcher_env["OMP_NUM_THREADS"]
    elif nproc_per_node > 1:
        expected["OMP_NUM_THREADS"] = "1"
    return expected


def check_worker_env(test, worker_env, launcher_env, expected, where):
    """Asserts the whole contract for one worker: EXPECTED values exactly, a sane
    MASTER_PORT and TORCHELASTIC_ERROR_FILE, every inherited variable passed through
    unchanged, and nothing else added."""
    for name, value in expected.items():
        test.assertEqual(worker_env.get(name), value, f"{where}: {name}")
    port = worker_env.get("MASTER_PORT", "")
    test.assertRegex(port, r"^\d+$", f"{where}: MASTER_PORT")
    test.assertTrue(1 <= int(port) <= 65535, f"{where}: MASTER_PORT {port}")
    error_file = worker_env.get("TORCHELASTIC_ERROR_FILE", "")
    test.assertTrue(os.path.isabs(error_file), f"{where}: TORCHELASTIC_ERROR_FILE {error_file!r} is not an absolute path")
    if "OMP_NUM_THREADS" not in expected:
        test.assertNotIn("OMP_NUM_THREADS", worker_env, f"{where}: OMP_NUM_THREADS set with a single local worker")
    set_by_gangrun = set(WORKER_VARIABLES) | set(CONDITIONAL_WORKER_VARIABLES) | set(VISIBILITY_VARIABLES)
    for name, value in launcher_env.items():
        if name not in set_by_gangrun:
            test.assertEqual(worker_env.get(name), value, f"{where}: inherited {name} was not passed through")
    added = set(worker_env) - set(launcher_env) - set_by_gangrun
    test.assertEqual(added, set(), f"{where}: variables set beyond the contract")
    missing = set(WORKER_VARIABLES) - set(worker_env)
    test.assertEqual(missing, set(), f"{where}: contract variables missing")
