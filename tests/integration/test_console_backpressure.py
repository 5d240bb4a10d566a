"""A console that stops reading never delays supervision (docs/supervision.md, "Output").

gangrun's stdout is a pipe this test holds and, for a while, does not read, as a pager or
`| (sleep 600; cat)` would. One worker floods it. While nothing is read, a failure must
still reach the other workers, and gangrun must still obey SIGTERM; once the test reads
again, every line arrives, in order: the flooding worker was held up, not its output lost.

The events are the fake worker's own records (--stamp when it fails, --on-term when SIGTERM
reaches it), looked for while the console pipe is still full and unread.
"""

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import harness
from harness import GANGRUN, GangrunTestCase, clean_env, wait_for

# Linux values (fcntl has them by name from Python 3.10 on).
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

FLOOD_LINES = 200000  # about 8 MB: far more than the pipes and gangrun's queue hold
LINE = re.compile(r"rank=0 line=(\d+) x{32}")


def unread_bytes(fd):
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def first_record(path):
    """The time in the first line of a --stamp or --on-term file, or None."""
    try:
        with open(path) as f:
            line = f.readline()
    except FileNotFoundError:
        return None
    return float(line.split()[-1]) if line.endswith("\n") else None


class StalledConsole(GangrunTestCase):
    def start_piped(self, args):
        """Starts gangrun with its stdout a one-page pipe nobody reads yet; returns (proc, fd)."""
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        argv = [GANGRUN, *[str(a) for a in args]]
        err = open(self.path("gangrun.err"), "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=write_end, stderr=err,
                                env=clean_env(), start_new_session=True, cwd=self.tmp)
        os.close(write_end)
        err.close()
        self._started.append(proc)
        self.addCleanup(os.close, read_end)
        return proc, read_end

    def wait_console_full(self, proc, fd):
        """Waits until gangrun's console pipe holds all it can: its writer is stuck."""
        size = fcntl.fcntl(fd, F_GETPIPE_SZ)

        def full():
            self.assertIsNone(proc.poll(), "gangrun ended while its console was stalled" + self.stderr())
            return unread_bytes(fd) >= size
        wait_for(full, harness.EVENT_TIMEOUT, "gangrun's stdout pipe to fill up")

    def drain(self, proc, fd, timeout=120):
        """Reads the console to EOF (gangrun and every worker gone) and waits for gangrun."""
        chunks = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                self.fail("gangrun's stdout did not reach EOF in time" + self.stderr())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("gangrun did not exit after its stdout closed" + self.stderr())
        return b"".join(chunks).decode(errors="replace")

    def stderr(self):
        with open(self.path("gangrun.err"), errors="replace") as f:
            return "\n--- gangrun's stderr ---\n" + f.read()[-3000:]

    def assert_flood_whole(self, text):
        """rank 0's lines are 0, 1, 2, ... with none missing, repeated or reordered; the last
        may be cut where SIGTERM stopped the worker mid-buffer."""
        lines = harness.prefixed_lines(text, 0)
        self.assertGreater(len(lines), 1000, "the flood never got going")
        for i, line in enumerate(lines):
            match = LINE.fullmatch(line)
            if match is None and i == len(lines) - 1:
                expected = f"rank=0 line={i} " + "x" * 32
                self.assertTrue(expected.startswith(line), f"last line {line!r} is not a piece of {expected!r}")
                continue
            self.assertIsNotNone(match, f"line {i} of rank 0 is garbled: {line[:200]!r}")
            self.assertEqual(int(match.group(1)), i, "rank 0's lines are missing or out of order")
        self.assertLess(len(lines), FLOOD_LINES, "the flood finished: the worker was never held up")
        other = [line for line in text.splitlines() if not line.startswith("[rank0]: ")]
        self.assertEqual(other, [], "lines that are not rank 0's")

    def flood(self):
        return ["--only-rank", 0, "--lines", FLOOD_LINES]

    def test_failure_reaches_the_peers_while_the_console_is_stalled(self):
        gate = self.path("gate")
        failed = self.path("failed.2")
        term = self.path("term.1")
        proc, fd = self.start_piped([
            "--nproc_per_node", 3, "--term_timeout", 30,
            *self.fake(*self.flood(),
                       "--only-rank", 1, "--on-term", term,
                       "--only-rank", 2, "--wait-file", gate, 60,
                       "--only-rank", 2, "--stamp", failed,
                       "--only-rank", 2, "--exit", 3,
                       "--sleep", 120)])
        self.wait_pid_files(3)
        self.wait_console_full(proc, fd)

        with open(gate, "w"):
            pass
        wait_for(lambda: first_record(failed), harness.EVENT_TIMEOUT, "rank 2 to fail")
        # The console is still full and unread: only a loop that never waits for it can
        # have stopped the peers.
        wait_for(lambda: first_record(term), harness.EVENT_TIMEOUT, "SIGTERM to reach rank 1 while the console is stalled")
        self.assertGreaterEqual(unread_bytes(fd), fcntl.fcntl(fd, F_GETPIPE_SZ))
        latency = first_record(term) - first_record(failed)
        print(f"failure -> SIGTERM to a peer with the console stalled: {latency * 1000:.0f} ms",
              file=sys.stderr)

        text = self.drain(proc, fd)
        self.assertEqual(proc.returncode, 3, self.stderr())
        self.assert_flood_whole(text)

    def test_gangrun_obeys_sigterm_while_the_console_is_stalled(self):
        term = self.path("term.1")
        proc, fd = self.start_piped([
            "--nproc_per_node", 2, "--term_timeout", 60,
            *self.fake(*self.flood(),
                       "--only-rank", 1, "--ignore-term",
                       "--only-rank", 1, "--on-term", term,
                       "--sleep", 120)])
        pids = self.wait_pid_files(2)
        self.wait_console_full(proc, fd)

        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: first_record(term), harness.EVENT_TIMEOUT, "gangrun to pass SIGTERM on while its console is stalled")
        # Rank 1 ignores SIGTERM; a second one makes gangrun kill it at once.
        proc.send_signal(signal.SIGTERM)
        self.assert_dead([pids[1]], timeout=harness.EVENT_TIMEOUT, what="rank 1 after the second SIGTERM")
        self.assertGreaterEqual(unread_bytes(fd), fcntl.fcntl(fd, F_GETPIPE_SZ))

        text = self.drain(proc, fd)
        self.assertEqual(proc.returncode, -signal.SIGTERM, self.stderr())
        self.assert_flood_whole(text)


if __name__ == "__main__":
    harness.main()
