"""gangrun on a kernel older than the ones it is built and tested on. close_range(2) came with
Linux 5.9 and pidfd_open(2) with 5.3, and the wheel is made for RHEL 8 and its kin, which run
4.18 (and Ubuntu 20.04, 5.4). Here a seccomp filter installed before gangrun starts refuses
those system calls with ENOSYS, as such a kernel does, for gangrun and everything it starts;
the tests check that the filter does that before they trust it.

What must hold there as here: a worker inherits no descriptor of gangrun's but its stdin,
stdout and stderr (not the store's sockets, not another worker's pipes, not another shim's
control pipe, whose end of file tells a shim that gangrun is gone); gangrun sees each shim
exit; a failed rank ends the gang; nothing survives gangrun's SIGKILL; a shim that does not
exit is killed (docs/supervision.md, "Supervision")."""

import ctypes
import errno
import os
import platform
import re
import signal
import subprocess
import sys

import harness
from harness import GangrunTestCase, TEST_PYTHON

# System calls newer than Linux 4.18, numbered alike on x86_64 and aarch64.
NEWER_THAN_4_18 = {"pidfd_send_signal": 424, "pidfd_open": 434, "close_range": 436}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
WORKERS = 4
EVERY_WAY_TO_DETACH = ("--spawn-grandchild", "--spawn-setsid-grandchild", "--spawn-daemon")
DDP_WORKER = os.path.join(harness.HERE, "torch_ddp_worker.py")


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _filter_refusing(numbers):
    """A classic BPF program for seccomp: these system calls fail with ENOSYS, the rest run."""
    load_word, jump_if_equal, ret = 0x20, 0x15, 0x06
    allow, fail_with = 0x7FFF0000, 0x00050000
    count = len(numbers)
    program = [(load_word, 0, 0, 4),  # seccomp_data.arch; another ABI's calls run
               (jump_if_equal, 0, count + 1, AUDIT_ARCH[platform.machine()]),
               (load_word, 0, 0, 0)]  # seccomp_data.nr
    program += [(jump_if_equal, count - k, 0, number) for k, number in enumerate(numbers)]
    program += [(ret, 0, 0, allow), (ret, 0, 0, fail_with | errno.ENOSYS)]
    return (_SockFilter * len(program))(*(_SockFilter(*row) for row in program))


def as_on_linux_4_18():
    """preexec_fn: from here on this process and all it starts lack NEWER_THAN_4_18
    (no_new_privs lets a process without CAP_SYS_ADMIN install the filter)."""
    libc = ctypes.CDLL(None, use_errno=True)
    instructions = _filter_refusing(sorted(NEWER_THAN_4_18.values()))
    program = _SockFprog(len(instructions), instructions)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0 or \
            libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(program), 0, 0) != 0:
        os._exit(99)


class Descriptors(GangrunTestCase):
    def descriptors_of_workers(self, **run):
        """Each worker's open descriptors, listed for the worker (sh) by its child ls, which
        writes to the stdout it inherited: a redirection would have sh keep a copy."""
        result = self.gangrun(["--nproc_per_node", WORKERS, "--no_python", "sh", "-c",
                               "ls /proc/$$/fd"], **run)
        self.assertExit(result, 0)
        found = {rank: [] for rank in range(WORKERS)}
        for line in result.stdout.splitlines():
            match = re.fullmatch(r"\[rank(\d+)\]: (\d+)", line)
            self.assertTrue(match, f"unexpected line {line!r}" + result.describe())
            found[int(match[1])].append(int(match[2]))
        return {rank: sorted(fds) for rank, fds in found.items()}

    def test_a_worker_holds_only_its_stdio(self):
        self.assertEqual(self.descriptors_of_workers(),
                         {rank: [0, 1, 2] for rank in range(WORKERS)})


class Linux418(GangrunTestCase):
    @classmethod
    def setUpClass(cls):
        if platform.machine() not in AUDIT_ARCH:
            raise harness.unittest.SkipTest(f"no seccomp filter written for {platform.machine()}")

    def setUp(self):
        super().setUp()
        calls = "\n".join(f"print(libc.syscall({n}, os.getpid(), 0, 0), ctypes.get_errno())"
                          for n in sorted(NEWER_THAN_4_18.values()))
        probe = subprocess.run(
            [sys.executable, "-c", f"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n{calls}"],
            preexec_fn=as_on_linux_4_18, capture_output=True, text=True, timeout=harness.EVENT_TIMEOUT)
        self.assertEqual(probe.stdout.split(), ["-1", str(errno.ENOSYS)] * len(NEWER_THAN_4_18),
                         f"the filter should refuse {sorted(NEWER_THAN_4_18)} with ENOSYS: {probe}")

    def test_a_worker_holds_only_its_stdio(self):
        self.assertEqual(Descriptors.descriptors_of_workers(self, preexec_fn=as_on_linux_4_18),
                         {rank: [0, 1, 2] for rank in range(WORKERS)})

    def test_a_failed_rank_ends_the_gang_and_leaves_nothing(self):
        go = self.path("go")
        proc = self.start(["--nproc_per_node", 3, *self.fake(
            "--except-rank", 1, "--touch", self.ready_file(),
            "--only-rank", 1, "--wait-file", go, 60, "--only-rank", 1, "--exit", 7,
            "--sleep", 60)], preexec_fn=as_on_linux_4_18)
        self.wait_ready(2)
        self.wait_pid_files(3)
        with open(go, "w"):
            pass
        self.assertExit(self.finish(proc), 7)
        self.assert_dead(list(self.pid_files().values()), what="workers after rank 1 failed")

    def test_one_short_job_after_another_ends(self):
        """gangrun's event loop may wake the watch of a shim's exit pipe while the pipe is not
        at its end of file: a spurious wake-up, which must not be taken for the shim's exit.
        Before that was checked, about one such job in nine waited forever."""
        for run in range(40):
            with self.subTest(run=run):
                result = self.gangrun(["--nproc_per_node", 8, "--no_python", "true"],
                                      timeout=harness.EVENT_TIMEOUT, preexec_fn=as_on_linux_4_18)
                self.assertExit(result, 0)

    def test_nothing_survives_sigkill_of_gangrun(self):
        proc = self.start(["--nproc_per_node", 3, *self.fake(
            *EVERY_WAY_TO_DETACH, "--touch", self.ready_file(), "--sleep", 60)],
            preexec_fn=as_on_linux_4_18)
        self.wait_ready(3)
        for stem in ("grandchild", "setsid_grandchild", "daemon"):
            self.wait_pid_files(3, stem)
        pids = [pid for stem in ("worker", "grandchild", "setsid_grandchild", "daemon")
                for pid in self.pid_files(stem).values()]
        self.assertEqual(len(pids), 12)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=harness.EVENT_TIMEOUT)
        self.assert_dead(pids, what="processes of the job after SIGKILL to gangrun")

    def test_a_shim_that_does_not_exit_is_killed(self):
        """Once every worker has ended, a shim that does not exit within 5 s is killed
        (Settings::supervisor_limit); without a pidfd, by its pid, which is still its own,
        since gangrun has not reaped it."""
        go = self.path("go")
        proc = self.start(["-v", "--nproc_per_node", 2, *self.fake(
            "--print-env", self.path("env.{rank}.json"), "--only-rank", 1, "--wait-file", go, 60)],
            preexec_fn=as_on_linux_4_18)
        err = self.path(f"gangrun.{proc.index}.err")
        harness.wait_for(lambda: os.path.exists(self.path("env.1.json")) and
                         re.search(r"rank 0 \(pid \d+\) ended", harness.read_text(err)),
                         harness.EVENT_TIMEOUT, "gangrun to see rank 0 end")
        shim = self.read_json(self.path("env.0.json"))["ppid"]
        os.kill(shim, signal.SIGSTOP)  # it can no longer exit by itself
        self.addCleanup(self.kill_if_still_ours, shim)  # should gangrun fail to
        with open(go, "w"):
            pass
        self.assertEqual(proc.wait(timeout=harness.EVENT_TIMEOUT), 0)
        self.assert_dead([shim], what="the stopped shim")

    def kill_if_still_ours(self, pid):
        if not harness.is_dead(pid) and self.tmp in harness.proc_cmdline(pid):
            os.kill(pid, signal.SIGKILL)

    def test_a_pytorch_gloo_job(self):
        harness.require_torch()
        out = self.path("out")
        os.mkdir(out)
        result = self.gangrun(["--nproc_per_node", 2, "--python", TEST_PYTHON, DDP_WORKER, out,
                               self.pid_dir], timeout=150, preexec_fn=as_on_linux_4_18)
        self.assertExit(result, 0)
        for rank in range(2):
            outcome = self.read_json(os.path.join(out, f"result.{rank}.json"))
            self.assertEqual(outcome["all_reduce"], outcome["expected_sum"])


if __name__ == "__main__":
    harness.main()
