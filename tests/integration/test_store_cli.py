"""`gangrun store`: serve, the client subcommands against it (values from arguments and
stdin, binary-safe; exit codes 0/1/2/3), signals ending serve, and interop with PyTorch
1.13: our client against PyTorch's own server (--dialect legacy), and PyTorch's client
against our server (the "/" key prefix convention)."""

import os
import signal
import socket
import subprocess
import sys
import time

import harness
from harness import GangrunTestCase, GANGRUN, TEST_PYTHON, clean_env, wait_for

# Python side of the interop tests: torch's own TCPStore, as a client or as the server.
TORCH_SERVER = (
    "import os, sys, time, datetime, torch.distributed as d\n"
    "s = d.TCPStore('127.0.0.1', 0, is_master=True, wait_for_workers=False,\n"
    "               timeout=datetime.timedelta(seconds=60))\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(s.port))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(300)\n"
)
TORCH_CLIENT = (
    "import sys, datetime, torch.distributed as d\n"
    "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), is_master=False,\n"
    "               timeout=datetime.timedelta(seconds=20))\n"
    "sys.stdout.write(s.get('from-gangrun').decode())\n"
    "s.set('from-python', 'hello from torch')\n"
    "sys.stdout.write(' ' + str(s.add('counter', 10)))\n"
)


def torch_available():
    try:
        subprocess.run([TEST_PYTHON, "-c", "import torch.distributed"], check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


class StoreCli(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self._servers = []  # `gangrun store serve` processes of this test
        self._others = []   # other processes this test started (torch, waiting clients)

    def tearDown(self):
        for proc in self._others:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        for proc in self._servers:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                self.finish(proc, timeout=20)
        super().tearDown()

    # ---- helpers

    def serve(self, *extra):
        """Starts `gangrun store serve` on an ephemeral loopback port; returns (proc, port)."""
        port_file = self.path(f"port.{len(self._servers)}")
        proc = self.start(["store", "serve", "--port", 0, "--port-file", port_file, *extra])
        self._servers.append(proc)

        def port():
            if proc.poll() is not None:
                self.fail("store serve ended early" + self._started_result(proc).describe())
            try:
                with open(port_file) as f:
                    return int(f.read())
            except FileNotFoundError:
                return None

        return proc, wait_for(port, 20, "the store's port file")

    def store(self, args, port=None, stdin=None, timeout=30, env=None):
        """Runs `gangrun store ARGS` to completion; stdout and stderr as bytes."""
        endpoint = [] if port is None else ["--endpoint", f"127.0.0.1:{port}"]
        argv = [GANGRUN, "store", *endpoint, *[str(a) for a in args]]
        start = time.monotonic()
        try:
            done = subprocess.run(argv, input=stdin if stdin is not None else b"",
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=clean_env() if env is None else env, timeout=timeout,
                                  cwd=self.tmp, start_new_session=True)
        except subprocess.TimeoutExpired as error:
            self.fail(f"{' '.join(argv)} did not finish within {timeout}s: {error.stderr!r}")
        return harness.Result(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def ok(self, args, port=None, **kw):
        result = self.store(args, port, **kw)
        self.assertExit(result, 0)
        return result.stdout

    def torch_server(self):
        port_file = self.path("torch-port")
        proc = subprocess.Popen([TEST_PYTHON, "-c", TORCH_SERVER, port_file], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._others.append(proc)

        def port():
            if proc.poll() is not None:
                self.fail("PyTorch's TCPStore server ended early")
            try:
                with open(port_file) as f:
                    return int(f.read())
            except FileNotFoundError:
                return None

        return wait_for(port, 60, "PyTorch's TCPStore server")

    # ---- serve and the client subcommands

    def test_set_and_get_from_arguments_and_stdin_binary_safe(self):
        _, port = self.serve()
        self.ok(["set", "greeting", "hello world"], port)
        self.assertEqual(self.ok(["get", "greeting"], port), b"hello world")  # no newline: not a tty

        blob = bytes(range(256)) * 64 + b"\n\r\x00"
        self.ok(["set", "blob"], port, stdin=blob)
        self.assertEqual(self.ok(["get", "blob"], port), blob)

        self.ok(["set", "empty", ""], port)
        self.assertEqual(self.ok(["get", "empty"], port), b"")
        self.ok(["set", "dash", "--", "-v"], port)
        self.assertEqual(self.ok(["get", "dash"], port), b"-v")

    def test_add_prints_the_new_value(self):
        _, port = self.serve()
        self.assertEqual(self.ok(["add", "n"], port), b"1\n")
        self.assertEqual(self.ok(["add", "n", "5"], port), b"6\n")
        self.assertEqual(self.ok(["add", "n", "-10"], port), b"-4\n")
        self.assertEqual(self.ok(["get", "n"], port), b"-4")

    def test_wait_that_times_out_exits_3_naming_the_keys(self):
        _, port = self.serve()
        self.ok(["set", "here", "1"], port)
        result = self.store(["wait", "here", "missing", "--timeout", "0.5"], port)
        self.assertExit(result, 3)
        self.assertIn(b"timed out", result.stderr)
        self.assertIn(b"missing", result.stderr)
        self.assertLess(result.elapsed, 10)
        result = self.store(["get", "missing", "--timeout", "0.3"], port)
        self.assertExit(result, 3)
        self.assertIn(b"timed out", result.stderr)

    def test_wait_released_by_a_concurrent_set(self):
        _, port = self.serve()
        waiter = subprocess.Popen([GANGRUN, "store", "wait", "a", "b", "--timeout", "30",
                                   "--endpoint", f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                                  start_new_session=True)
        self._others.append(waiter)
        self.ok(["set", "a", "1"], port)
        time.sleep(0.3)
        self.assertIsNone(waiter.poll(), "wait returned before every key was set")
        self.ok(["set", "b", "2"], port)
        # Released by the set: a wait that timed out (after 30 s) would exit 3.
        _, err = waiter.communicate(timeout=harness.EVENT_TIMEOUT)
        self.assertEqual(waiter.returncode, 0, err.decode(errors="replace"))

    def test_check_and_delete_exit_codes(self):
        _, port = self.serve()
        self.ok(["set", "a", "1"], port)
        self.assertExit(self.store(["check", "a"], port), 0)
        self.assertExit(self.store(["check", "a", "b"], port), 1)
        self.assertExit(self.store(["delete", "a"], port), 0)
        self.assertExit(self.store(["delete", "a"], port), 1)
        result = self.store(["check", "a"], port)
        self.assertExit(result, 1)
        self.assertEqual(result.stdout, b"")

    def test_keys_and_num_keys(self):
        _, port = self.serve()
        self.assertEqual(self.ok(["num-keys"], port), b"0\n")
        for key in ("beta", "alpha", "job/step1"):
            self.ok(["set", key, "x"], port)
        self.ok(["set", "raw", "x", "--raw-keys"], port)
        self.assertEqual(self.ok(["keys"], port).decode().splitlines(), ["alpha", "beta", "job/step1", "raw"])
        self.assertEqual(self.ok(["keys", "--raw-keys"], port).decode().splitlines(),
                         ["/alpha", "/beta", "/job/step1", "raw"])
        self.assertEqual(self.ok(["num-keys"], port), b"4\n")
        # the prefix: "alpha" is stored as "/alpha"
        self.assertExit(self.store(["check", "/alpha", "--raw-keys"], port), 0)
        self.assertExit(self.store(["check", "raw"], port), 1)

    def test_endpoint_from_the_environment(self):
        _, port = self.serve()
        self.ok(["set", "k", "v"], env=clean_env(GANGRUN_STORE_ENDPOINT=f"127.0.0.1:{port}"))
        self.assertEqual(self.ok(["get", "k"], env=clean_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)), b"v")

    def test_serve_limits_are_enforced(self):
        _, port = self.serve("--max-value-bytes", 16)
        self.ok(["set", "small", "x" * 16], port)
        result = self.store(["set", "big", "x" * 17], port)
        self.assertExit(result, 3)
        self.assertExit(self.store(["check", "big"], port), 1)

    def test_port_in_use_exits_3_naming_the_address(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            result = self.gangrun(["store", "serve", "--port", port], timeout=30)
        self.assertExit(result, 3)
        self.assertIn(f"127.0.0.1:{port}", result.stderr)

    def test_a_port_shared_through_so_reuseport_is_in_use_too(self):
        """The store listens through several SO_REUSEPORT queues; a second store, or any
        SO_REUSEPORT listener of the same user, must still make the port count as taken
        rather than quietly share its connections."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            result = self.gangrun(["store", "serve", "--port", port], timeout=30)
        self.assertExit(result, 3)
        self.assertIn(f"127.0.0.1:{port}", result.stderr)

        _, port = self.serve()
        self.ok(["set", "k", "v"], port)
        second = self.gangrun(["store", "serve", "--port", port], timeout=30)
        self.assertExit(second, 3)
        self.assertIn(f"127.0.0.1:{port}", second.stderr)
        for _ in range(20):  # every connection still reaches the first store
            self.assertEqual(self.ok(["get", "k"], port), b"v")

    def test_sigterm_and_sigint_end_serve_with_0(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                proc, port = self.serve()
                self.ok(["set", "k", "v"], port)
                os.kill(proc.pid, sig)
                result = self.finish(proc, timeout=20)
                self.assertExit(result, 0)
                self.assertIn(f"store listening on 127.0.0.1:{port}", result.stderr)

    def test_connect_failure_exits_3(self):
        port = harness.free_port()
        result = self.store(["get", "k", "--timeout", "0.5"], port)
        self.assertExit(result, 3)
        self.assertIn(f"cannot reach the store at 127.0.0.1:{port}".encode(), result.stderr)
        self.assertLess(result.elapsed, 10)

    def test_validated_client_against_a_legacy_only_server_says_why(self):
        if not torch_available():
            self.skipTest(f"{TEST_PYTHON} cannot import torch.distributed")
        port = self.torch_server()
        result = self.store(["num-keys", "--timeout", "5"], port)
        self.assertExit(result, 3)
        self.assertIn(b"legacy", result.stderr)
        self.assertLess(result.elapsed, 10)

    def test_usage_errors_exit_2_and_name_the_problem(self):
        cases = [
            (["gte", "k"], "did you mean get?"),
            (["get"], "KEY"),
            (["get", "k", "--timeout", "soon"], "--timeout"),
            (["get", "k", "--endpoint", "host:http"], "--endpoint"),
            (["get", "k", "--dialect", "old"], "--dialect"),
            (["add", "n", "two"], "DELTA"),
            (["keys", "--dialect", "legacy"], "validated"),
            (["serve", "--port", "65536"], "--port"),
            (["serve", "--max-connections", "0"], "--max-connections"),
            ([], "missing command"),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                result = self.store(args)
                self.assertExit(result, 2)
                self.assertIn(expected.encode(), result.stderr)

    def test_help(self):
        result = self.store(["--help"])
        self.assertExit(result, 0)
        for word in (b"serve", b"get", b"num-keys", b"--endpoint", b"Exit status"):
            self.assertIn(word, result.stdout)
        result = self.store(["set", "--help"])
        self.assertExit(result, 0)
        self.assertIn(b"VALUE", result.stdout)

    def test_a_program_named_store_after_double_dash_is_launched(self):
        bin_dir = self.path("bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "store"), "w") as f:
            f.write("#!/bin/sh\necho launched-store \"$@\"\n")
        os.chmod(os.path.join(bin_dir, "store"), 0o755)
        env = clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        result = self.gangrun(["--", "store", "get", "k"], env=env, timeout=60)
        self.assertExit(result, 0)
        self.assertIn("launched-store get k", result.stdout)

    # ---- interop with PyTorch 1.13

    def test_client_commands_against_pytorchs_own_server(self):
        if not torch_available():
            self.skipTest(f"{TEST_PYTHON} cannot import torch.distributed")
        port = self.torch_server()
        legacy = ["--dialect", "legacy", "--timeout", "10"]
        self.ok(["set", "k", "v1", *legacy], port)
        self.ok(["set", "bin", *legacy], port, stdin=b"\x00\x01\xff")
        self.assertEqual(self.ok(["get", "k", *legacy], port), b"v1")
        self.assertEqual(self.ok(["get", "bin", *legacy], port), b"\x00\x01\xff")
        self.assertEqual(self.ok(["add", "n", "3", *legacy], port), b"3\n")
        self.assertExit(self.store(["check", "k", "n", *legacy], port), 0)
        self.assertExit(self.store(["check", "nope", *legacy], port), 1)
        self.assertExit(self.store(["wait", "k", *legacy], port), 0)
        result = self.store(["wait", "nope", *legacy, "--timeout", "0.4"], port)
        self.assertExit(result, 3)
        self.assertIn(b"timed out", result.stderr)
        self.assertEqual(self.ok(["num-keys", *legacy], port), b"3\n")
        self.assertExit(self.store(["delete", "k", *legacy], port), 0)
        self.assertExit(self.store(["delete", "k", *legacy], port), 1)
        self.assertEqual(self.ok(["num-keys", *legacy], port), b"2\n")

    def test_pytorch_client_reads_what_gangrun_store_set_wrote(self):
        if not torch_available():
            self.skipTest(f"{TEST_PYTHON} cannot import torch.distributed")
        _, port = self.serve()
        self.ok(["set", "from-gangrun", "hello from gangrun"], port)
        self.ok(["add", "counter", "5"], port)
        done = subprocess.run([TEST_PYTHON, "-c", TORCH_CLIENT, str(port)], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr.decode(errors="replace"))
        self.assertEqual(done.stdout.decode(), "hello from gangrun 15")
        self.assertEqual(self.ok(["get", "from-python"], port), b"hello from torch")
        self.assertEqual(self.ok(["get", "counter"], port), b"15")


def main():
    if not (os.path.isfile(GANGRUN) and os.access(GANGRUN, os.X_OK)):
        print(f"SKIP: GANGRUN_BIN is not an executable file: {GANGRUN}", file=sys.stderr)
        sys.exit(harness.SKIP)
    import unittest
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
