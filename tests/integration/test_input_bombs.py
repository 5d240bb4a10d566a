"""Files a user names cannot make gangrun hang, eat memory or take long, and a NUL inside one
cannot cut a value short: -H/--hostfile, --config, accelerate's --config_file and
.deepspeed_env are read only as bounded regular files (a FIFO, a pipe, /dev/zero or a file
over the limit is exit 2 at once, naming the file), and a NUL in any of their strings is exit 2
naming the file and the key. Every gangrun run here is bounded by a timeout: a hang fails the
test instead of holding it."""

import os
import subprocess
import time

import harness
from harness import GangrunTestCase

# Far longer than any of these runs takes; only a hang reaches it.
TIMEOUT = 30

HOSTFILE_LIMIT = 16 * 1024 * 1024


class InputBombCase(GangrunTestCase):
    def refused(self, options, must_name, cwd=None):
        """gangrun OPTIONS fake-worker exits 2 within TIMEOUT, names each of MUST_NAME on
        stderr and starts nothing. HOME is the test's directory, so that no .deepspeed_env
        of the user's is read."""
        result = self.gangrun([*options, *self.fake("--exit", 0)], timeout=TIMEOUT, cwd=cwd,
                              env=harness.clean_env(HOME=self.tmp))
        self.assertExit(result, 2)
        for text in must_name:
            self.assertIn(text, result.stderr, result.describe())
        self.assert_nothing_started()
        return result

    def write(self, name, text, mode="w"):
        path = self.path(name)
        with open(path, mode) as f:
            f.write(text)
        return path


class HostfileBombs(InputBombCase):
    def test_dev_zero(self):
        # Used to be read until memory ran out (exit 4).
        self.refused(["-H", "/dev/zero"], ["/dev/zero", "character device", "regular file"])

    def test_fifo_without_writer(self):
        # Used to block in open() forever.
        fifo = self.path("hostfile.fifo")
        os.mkfifo(fifo)
        self.refused(["-H", fifo], [fifo, "FIFO", "regular file"])

    def test_pipe_with_a_writer_that_never_closes(self):
        # What -H <(generator) gives: /dev/fd/N on a pipe. Refused by its type, not read.
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, b"localhost slots=1\n")
            argv = [harness.GANGRUN, "-H", f"/dev/fd/{read_end}", *self.fake("--exit", 0)]
            start = time.monotonic()
            done = subprocess.run(argv, pass_fds=(read_end,), capture_output=True, text=True,
                                  timeout=TIMEOUT, env=harness.clean_env(), cwd=self.tmp,
                                  stdin=subprocess.DEVNULL)
            result = harness.Result(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - start)
        finally:
            os.close(read_end)
            os.close(write_end)
        self.assertExit(result, 2)
        self.assertIn(f"/dev/fd/{read_end}", result.stderr, result.describe())
        self.assertIn("FIFO", result.stderr, result.describe())
        self.assert_nothing_started()

    def test_file_over_the_limit(self):
        path = self.path("huge-hostfile")
        with open(path, "w") as f:
            f.write("node1 slots=1\n")
            f.truncate(HOSTFILE_LIMIT + 1)  # sparse: refused by its size before a byte is read
        self.refused(["-H", path], [path, "larger than 16384 KiB"])

    def test_hundred_thousand_hosts_and_a_duplicate(self):
        # A check that compared each host with every earlier one took 13 s here; the
        # timeout, not a timing assertion, is what catches a return to that.
        lines = "".join(f"node-{i} slots=8\n" for i in range(100_000))
        path = self.write("big-hostfile", lines + "node-4711 slots=1\n")
        self.refused(["-H", path], [f"{path}:100001", "'node-4711' is already named on line 4712"])

    def test_nul_in_a_host_name(self):
        path = self.write("nul-hostfile", b"node1 slots=1\nnode2\0.evil slots=1\n", mode="wb")
        self.refused(["-H", path], [f"{path}:2", "NUL character"])


class ConfigBombs(InputBombCase):
    def test_nul_in_master_addr(self):
        # Used to become MASTER_ADDR=127.0.0.1.
        path = self.write("config.json", '{"master_addr": "127.0.0.1\\u0000.evil.com"}')
        self.refused(["--config", path], [f'{path}: key "master_addr": the value contains a NUL character'])

    def test_nul_in_log_dir_creates_nothing(self):
        # Used to be exit 4 after creating the directory "logs".
        work = self.path("work")
        os.mkdir(work)
        path = self.write("config.json", '{"log_dir": "logs\\u0000x"}')
        self.refused(["--config", path], [f'{path}: key "log_dir": the value contains a NUL character'],
                     cwd=work)
        self.assertEqual(os.listdir(work), [], "a directory was created for a refused log_dir")

    def test_config_fifo_and_dev_zero(self):
        fifo = self.path("config.fifo")
        os.mkfifo(fifo)
        self.refused(["--config", fifo], [fifo, "FIFO"])
        self.refused(["--config", "/dev/zero"], ["/dev/zero", "character device"])

    def test_nul_in_accelerate_yaml(self):
        path = self.write("accelerate.yaml", 'main_process_ip: "127.0.0.1\\0.evil.com"\n')
        self.refused(["--config_file", path],
                     [f'{path}: key "main_process_ip": the value contains a NUL character'])

    def test_accelerate_yaml_fifo(self):
        fifo = self.path("accelerate.fifo")
        os.mkfifo(fifo)
        self.refused(["--config_file", fifo], [fifo, "FIFO"])


class DeepspeedEnvBombs(InputBombCase):
    def test_nul_in_deepspeed_env(self):
        # .deepspeed_env is read where gangrun starts hosts over ssh; the dry run reads it too.
        hostfile = self.write("hostfile", "node-a slots=1\nnode-b slots=1\n")
        env_file = self.write(".deepspeed_env", b"NCCL_DEBUG=INFO\0x\n", mode="wb")
        self.refused(["--dry-run", "-H", hostfile],
                     [f'{env_file}:1: key "NCCL_DEBUG": the value contains a NUL character'])


if __name__ == "__main__":
    harness.main()
