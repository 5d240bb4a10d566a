"""Raw TCPStore wire helpers for the store tests: requests written byte by byte as
lib/store/PROTOCOL.md lays them out, and a `gangrun store serve` fixture.

Kept apart from harness.py because only the store tests need it.
"""

import os
import resource
import signal
import socket
import struct
import subprocess
import time

import harness

MAGIC = 0x3C85F7CE
VALIDATE_BYTES = b"\x00" + struct.pack("<I", MAGIC)  # 00 CE F7 85 3C

LEGACY = dict(SET=0, COMPARE_SET=1, GET=2, ADD=3, CHECK=4, WAIT=5, GETNUMKEYS=6, WATCH_KEY=7,
              DELETE_KEY=8, APPEND=9, MULTI_GET=10, MULTI_SET=11, CANCEL_WAIT=12)
VALIDATED = dict(VALIDATE=0, SET=1, COMPARE_SET=2, GET=3, ADD=4, CHECK=5, WAIT=6, GETNUMKEYS=7,
                 DELETE_KEY=8, APPEND=9, MULTI_GET=10, MULTI_SET=11, CANCEL_WAIT=12, PING=13,
                 QUEUE_PUSH=14, QUEUE_POP=15, QUEUE_LEN=16, LIST_KEYS=17, BARRIER=18)

READY, NOT_READY = 0, 1
STOP_WAITING, WAIT_CANCELED = 0, 1


def blob(data):
    """u64 length + bytes."""
    if isinstance(data, str):
        data = data.encode()
    return struct.pack("<Q", len(data)) + data


def i64(value):
    return struct.pack("<q", value)


def u64(value):
    return struct.pack("<Q", value)


def u32(value):
    return struct.pack("<I", value)


class Wire:
    """One raw connection. Requests are built by the caller; replies read with a timeout."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def recv_exact(self, count, timeout=None):
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError(f"closed by the server after {len(data)} of {count} bytes")
            data += chunk
        return data

    def u8(self, timeout=None):
        return self.recv_exact(1, timeout)[0]

    def i64(self):
        return struct.unpack("<q", self.recv_exact(8))[0]

    def u32(self):
        return struct.unpack("<I", self.recv_exact(4))[0]

    def blob(self):
        return self.recv_exact(struct.unpack("<Q", self.recv_exact(8))[0])

    def nothing_within(self, seconds):
        """True if no byte arrives (and the connection stays open) for SECONDS. A byte that
        does arrive is left unread."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(1, socket.MSG_PEEK)
        except socket.timeout:
            return True
        if not data:
            raise ConnectionError("closed by the server")
        return False

    def closed_within(self, seconds):
        """True if the server closes the connection within SECONDS (bytes before EOF are dropped)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not self.sock.recv(65536):
                    return True
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
        return False


    # ---- requests by name, in the numbering of the subclass's dialect

    OPCODES = {}

    def op(self, name, payload=b""):
        self.send(bytes([self.OPCODES[name]]) + payload)

    def set(self, key, value):
        self.op("SET", blob(key) + blob(value))

    def get(self, key):
        self.op("GET", blob(key))
        return self.blob()

    def add(self, key, delta):
        self.op("ADD", blob(key) + i64(delta))
        return self.i64()

    def num_keys(self):
        self.op("GETNUMKEYS")
        return self.i64()


class Validated(Wire):
    """A connection speaking the 2.x dialect: VALIDATE + PING sent on connect."""

    OPCODES = VALIDATED

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        super().__init__(port, host, timeout)
        self.send(VALIDATE_BYTES + bytes([VALIDATED["PING"]]) + u32(4242))
        assert self.u32() == 4242, "PING was not echoed"

    def ping(self, nonce):
        self.op("PING", u32(nonce))
        return self.u32()


class Legacy(Wire):
    """A connection speaking the 1.13 dialect."""

    OPCODES = LEGACY


def open_sockets(pid):
    """How many sockets process PID holds open."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def vm_rss_kib(pid, field="VmRSS"):
    """VmRSS (or another field of /proc/PID/status given in kB, such as VmHWM) in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def sanitized(binary=harness.GANGRUN):
    """True if BINARY was built with a sanitizer (which needs terabytes of address space)."""
    with open(binary, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


class ServedStore:
    """`gangrun store serve` on loopback and an ephemeral port, for one test.

        with ServedStore(test_case, "--max-key-bytes", 100) as store:
            Legacy(store.port) ...
    Leaving the block sends SIGTERM and checks the server ended with 0.
    """

    def __init__(self, case, *extra, address_space=None):
        """address_space: an RLIMIT_AS for the server, in bytes (so that it runs out of memory)."""
        self.case = case
        self.port_file = case.path(f"store-port.{time.monotonic_ns()}")
        argv = ["store", "serve", "--host", "127.0.0.1", "--port", 0, "--port-file", self.port_file, *extra]
        if address_space is None:
            self.proc = case.start(argv)
        else:
            # The child inherits the soft limit; this process has it only while starting it.
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (address_space, hard))
            try:
                self.proc = case.start(argv)
            finally:
                resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        self.port = int(harness.wait_for(self._read_port, 20, "the store's port file"))

    def _read_port(self):
        if self.proc.poll() is not None:
            self.case.fail("gangrun store serve ended early" + self.case._started_result(self.proc).describe())
        try:
            with open(self.port_file) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return None
        return text or None

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        return self.case._started_result(self.proc).stderr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        result = self.case.finish(self.proc, timeout=30)
        if exc[0] is None:
            self.case.assertExit(result, 0)


def torch_store_server(case, python=harness.TEST_PYTHON):
    """PyTorch's own TCPStore server (is_master=True) in a child process.
    Returns (Popen, port); the caller terminates it."""
    port_file = case.path(f"torch-port.{time.monotonic_ns()}")
    code = (
        "import sys, time, datetime, torch.distributed as d\n"
        "s = d.TCPStore('127.0.0.1', 0, is_master=True, wait_for_workers=False,\n"
        "               timeout=datetime.timedelta(seconds=60))\n"
        "open(sys.argv[1] + '.tmp', 'w').write(str(s.port))\n"
        "import os; os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([python, "-c", code, port_file], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def port():
        if proc.poll() is not None:
            case.fail("PyTorch's store server ended early: " + proc.stderr.read().decode(errors="replace"))
        try:
            with open(port_file) as f:
                return int(f.read())
        except FileNotFoundError:
            return None

    return proc, harness.wait_for(port, 60, "PyTorch's store server")


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()
