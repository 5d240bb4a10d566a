"""OpenSSH servers on simulated nodes (netns_nodes.Nodes), for tests of gangrun's hostfiles
over ssh. Everything lives in the test's directory: host and client keys made with
ssh-keygen, authorized_keys, each sshd's config and pid file, and a client config that
`ssh -F` reads instead of the user's own (so no file outside the test is read or written
by the client). sshd needs its privilege-separation directory /run/sshd; each sshd runs in
its node's private mount namespace with the test's directory bound over /run there, so the
machine's /run is not touched.

    servers = SshdNodes(test, nodes, [1, 2, 3])   # one sshd per node, ready to log in
    gangrun ... --ssh_port servers.port --launcher_args servers.launcher_args ...

The servers are stopped (by pid) at the test's cleanup.
"""

import os
import shutil
import subprocess

import harness

SSHD = "/usr/sbin/sshd"
PORT = 2222  # each node has its own network namespace: any port is free there


def skip_reason():
    """Why sshd-based tests cannot run here, or None."""
    for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen")):
        if not tool or not os.access(tool, os.X_OK):
            return "OpenSSH (sshd, ssh, ssh-keygen) is not installed"
    return None


class SshdNodes:
    def __init__(self, test, nodes, node_numbers, port=PORT):
        self.test = test
        self.nodes = nodes
        self.port = port
        self.dir = os.path.join(test.tmp, "ssh")
        os.makedirs(os.path.join(self.dir, "run", "sshd"), mode=0o755)
        os.chmod(os.path.join(self.dir, "run"), 0o755)
        self.client_key = os.path.join(self.dir, "client_key")
        self.client_config = os.path.join(self.dir, "ssh_config")
        self._keygen(os.path.join(self.dir, "host_key"))
        self._keygen(self.client_key)
        shutil.copy(self.client_key + ".pub", os.path.join(self.dir, "authorized_keys"))
        with open(self.client_config, "w") as f:
            f.write(f"Host *\n  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {self.dir}/known_hosts\n  GlobalKnownHostsFile /dev/null\n"
                    "  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n  ConnectTimeout 10\n")
        self.servers = {}
        test.addCleanup(self.stop)
        for node in node_numbers:
            self.start(node)
        for node in node_numbers:
            self.wait_ready(node)

    @property
    def launcher_args(self):
        """--launcher_args for gangrun: ssh reads the test's client config only."""
        return f"-F {self.client_config}"

    def ssh_argv(self, host, *command):
        return ["ssh", "-F", self.client_config, "-o", "BatchMode=yes", "-p", str(self.port), host, *command]

    def _keygen(self, path):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=harness.EVENT_TIMEOUT)

    def _config(self, node):
        path = os.path.join(self.dir, f"sshd_config.{node}")
        with open(path, "w") as f:
            f.write(f"Port {self.port}\nHostKey {self.dir}/host_key\n"
                    f"AuthorizedKeysFile {self.dir}/authorized_keys\nStrictModes no\n"
                    f"PidFile {self.dir}/sshd.{node}.pid\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
                    "UsePAM no\nPrintMotd no\nLogLevel ERROR\n")
        return path

    def start(self, node):
        """Starts sshd -D -e on node NODE (its log in ssh/sshd.NODE.log)."""
        run_dir = os.path.join(self.dir, "run")
        log = open(os.path.join(self.dir, f"sshd.{node}.log"), "wb")
        self.test.addCleanup(log.close)
        proc = self.nodes.popen(node, ["sh", "-c", 'mount --bind "$0" /run && exec "$1" -D -e -f "$2"',
                                       run_dir, SSHD, self._config(node)], stdout=log, stderr=log)
        self.servers[node] = proc

    def wait_ready(self, node):
        def logs_in():
            if self.servers[node].poll() is not None:
                with open(os.path.join(self.dir, f"sshd.{node}.log")) as f:
                    self.test.fail(f"sshd on node{node} exited: {f.read()[-2000:]}")
            done = subprocess.run(self.nodes.argv(1, self.ssh_argv(f"node{node}", "true")),
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=harness.EVENT_TIMEOUT)
            return done.returncode == 0
        harness.wait_for(logs_in, harness.EVENT_TIMEOUT, f"sshd on node{node} to let the test's key in",
                         interval=0.1)

    def assert_only_sshd_left(self, node):
        """Waits until node NODE runs nothing but its sshd (no session, shell, daemon, agent or
        worker of a job left); fails the test naming what is left."""
        def others():
            done = subprocess.run(["ip", "netns", "pids", self.nodes.namespace(node)], capture_output=True,
                                  text=True, timeout=harness.EVENT_TIMEOUT)
            return [int(p) for p in done.stdout.split() if int(p) != self.servers[node].pid]
        try:
            harness.wait_for(lambda: not others(), harness.EVENT_TIMEOUT, f"node{node} to run only its sshd")
        except AssertionError:
            self.test.fail(f"left running on node{node}: " + ", ".join(harness.proc_describe(p) for p in others()))

    def stop(self):
        """Stops every sshd by its pid (the node's exec made it the process we started)."""
        for proc in self.servers.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.servers.values():
            try:
                proc.wait(timeout=harness.EVENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
