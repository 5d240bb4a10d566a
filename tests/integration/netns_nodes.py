"""Simulated nodes for multi-node integration tests: network namespaces made by
scripts/netns-nodes (read its header for what a node is).

    reason = netns_nodes.skip_reason()
    if reason:
        self.skipTest(reason)
    with netns_nodes.Nodes(self, 2) as nodes:
        server = nodes.popen(1, [...])              # runs on node1, reachable at nodes.address(1)
        result = nodes.run(2, [...], timeout=30)    # a harness.Result
        nodes.cut(2); nodes.mend(2)                 # unplug and plug back node 2's cable

Every Nodes has its own prefix and subnet, so tests may run at the same time. Its cleanup
is registered with the test before anything is made, so it runs even when the test fails:
it kills the process groups it started (by pid), then runs `netns-nodes down`, which kills
whatever else runs in the nodes and removes them and the subnet's blackhole route.

Rule: every process that talks to a node's address runs in a node. The root namespace
has a blackhole route for the subnet while the nodes exist, so that a mistake fails
instead of reaching the real network.
"""

import functools
import os
import random
import shutil
import signal
import string
import subprocess
import time

import harness

SCRIPT = os.path.join(harness.REPO, "scripts", "netns-nodes")

# The subnets 10.200.0 to 10.254.255 are ours; a test's is drawn at random, avoiding those
# routed now (another test's blackhole), so concurrent tests do not share one.
_FIRST_SECOND_OCTET = 200
_SECOND_OCTETS = 55


def _probe(argv):
    """None when ARGV succeeds, else what went wrong, in words."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{' '.join(argv)}: {error}"
    if done.returncode != 0:
        return f"{' '.join(argv)} failed ({done.returncode}): {done.stdout.decode(errors='replace').strip()[:200]}"
    return None


@functools.lru_cache(maxsize=None)
def skip_reason():
    """A string saying why simulated nodes cannot be made here (not root, a tool missing,
    no right to make namespaces, veth pairs or bridges), or None when they can. It tries
    the primitives scripts/netns-nodes uses, not the script, so that a fault in the script
    fails tests instead of skipping them. The answer is computed once per process."""
    if os.geteuid() != 0:
        return "simulated nodes need root (network namespaces)"
    for tool in ("ip", "nsenter", "unshare", "mount", "hostname", "getent"):
        if shutil.which(tool) is None:
            return f"simulated nodes need '{tool}' (Debian: iproute2, util-linux, mount, hostname, libc-bin)"
    probe = f"grprobe{os.getpid()}x"
    try:
        for argv in (["ip", "netns", "add", probe],
                     ["ip", "-n", probe, "link", "add", "br0", "type", "bridge"],
                     ["ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
                     ["nsenter", f"--net=/run/netns/{probe}", "unshare", "--mount", "--uts",
                      "--propagation", "private", "true"]):
            failure = _probe(argv)
            if failure:
                return f"cannot make simulated nodes: {failure}"
    finally:
        if os.path.exists(f"/run/netns/{probe}"):
            subprocess.run(["ip", "netns", "delete", probe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=30)
    return None


def _routed_subnets():
    """The /24 destinations in the root namespace's routing table, as "A.B.C"."""
    done = subprocess.run(["ip", "-4", "route", "show", "table", "all"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=30)
    subnets = set()
    for line in done.stdout.splitlines():
        for word in line.split():
            if word.endswith(".0/24"):
                subnets.add(word[:-len(".0/24")])
    return subnets


def _pick_subnet():
    taken = _routed_subnets()
    rng = random.Random(f"{os.getpid()} {time.monotonic_ns()}")
    while True:
        subnet = f"10.{_FIRST_SECOND_OCTET + rng.randrange(_SECOND_OCTETS)}.{rng.randrange(256)}"
        if subnet not in taken:
            return subnet


def _pick_prefix():
    # Letters only: a prefix must not end in a digit (scripts/netns-nodes).
    rng = random.Random(f"{os.getpid()} {time.monotonic_ns()} prefix")
    return "gr" + "".join(rng.choice(string.ascii_lowercase) for _ in range(6))


class Nodes:
    """COUNT simulated nodes, node1 to nodeCOUNT, for TEST (a unittest.TestCase), made on
    construction; a failure to make them fails the test. Usable as a context manager,
    whose end removes them; the test's cleanup removes them too (close() is idempotent)."""

    def __init__(self, test, count, ifnames=(), decoy=False, loopback_hostname=False):
        """IFNAMES: node I's interface name is IFNAMES[I-1] (eth0 past the list); DECOY:
        each node also has decoy0, listed first and leading nowhere; LOOPBACK_HOSTNAME: a
        node's own name resolves to 127.0.1.1 inside it (scripts/netns-nodes' options)."""
        self.test = test
        self.count = count
        self.ifnames = list(ifnames)
        self.prefix = _pick_prefix()
        self.subnet = _pick_subnet()
        self._processes = []  # Popen objects, each the leader of its own process group
        self._closed = False
        test.addCleanup(self.close)
        options = []
        if self.ifnames:
            options += ["--ifnames", ",".join(self.ifnames)]
        if decoy:
            options.append("--decoy")
        if loopback_hostname:
            options.append("--loopback-hostname")
        result = self.script(*options, "up", str(count))
        if result.returncode != 0:
            test.fail(f"netns-nodes up {count} failed" + result.describe())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- where things are

    def address(self, node):
        """Node NODE's IPv4 address, "A.B.C.NODE"."""
        self._check_node(node)
        return f"{self.subnet}.{node}"

    def ifname(self, node):
        """The name of node NODE's interface toward the others."""
        self._check_node(node)
        return self.ifnames[node - 1] if node <= len(self.ifnames) else "eth0"

    def hostname(self, node):
        return f"node{node}"

    def namespace(self, node):
        """The name of node NODE's network namespace (for `ip -n`)."""
        self._check_node(node)
        return f"{self.prefix}{node}"

    def argv(self, node, argv):
        """The argv that runs ARGV on node NODE, with the caller's environment and working
        directory, as the same process (scripts/netns-nodes exec)."""
        self._check_node(node)
        return [SCRIPT, "--prefix", self.prefix, "exec", str(node), *[str(a) for a in argv]]

    # ---- processes on the nodes

    def popen(self, node, argv, **kw):
        """Starts ARGV on node NODE in a session (and process group) of its own, stdin from
        /dev/null unless KW says otherwise; KW goes to subprocess.Popen. The group is killed
        at close() if it is still running."""
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(self.argv(node, argv), start_new_session=True, **kw)
        self._processes.append(proc)
        return proc

    def run(self, node, argv, timeout, **kw):
        """Runs ARGV on node NODE to completion and returns a harness.Result with text
        stdout and stderr; fails the test (killing the process group) after TIMEOUT seconds."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        start = time.monotonic()
        proc = self.popen(node, argv, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            out, err = proc.communicate(timeout=harness.EVENT_TIMEOUT)
            result = harness.Result(proc.args, None, out or "", err or "", time.monotonic() - start)
            self.test.fail(f"node {node}: did not finish within {timeout}s" + result.describe())
        return harness.Result(proc.args, proc.returncode, out or "", err or "", time.monotonic() - start)

    # ---- the network

    def cut(self, node):
        """Unplugs node NODE's cable: its packets go nowhere, as with a dead switch port."""
        self._cable("cut", node)

    def mend(self, node):
        """Plugs node NODE's cable back in."""
        self._cable("mend", node)

    def script(self, *args, timeout=harness.EVENT_TIMEOUT):
        """Runs scripts/netns-nodes ARGS with this prefix and subnet; a harness.Result."""
        argv = [SCRIPT, "--prefix", self.prefix, "--net", self.subnet, *args]
        start = time.monotonic()
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            return harness.Result(argv, None, expired.stdout or "", expired.stderr or "", time.monotonic() - start)
        return harness.Result(argv, done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    # ---- the end

    def close(self):
        """Kills the process groups started here that still run, then removes the nodes
        (everything still running in them is killed by pid). Fails the test when the
        removal fails. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for proc in self._processes:
            self._kill_group(proc)
        for proc in self._processes:
            try:
                proc.wait(timeout=harness.EVENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass  # in the nodes, so down kills it
        result = self.script("down")
        for proc in self._processes:
            try:
                proc.wait(timeout=harness.EVENT_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.test.fail(f"pid {proc.pid} survived netns-nodes down: {harness.proc_describe(proc.pid)}")
        if result.returncode != 0:
            self.test.fail("netns-nodes down failed" + result.describe())

    @staticmethod
    def _kill_group(proc):
        # Only while the leader is not reaped: until then its pid, the group's id, cannot
        # be reused by a process that is not ours.
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _cable(self, verb, node):
        self._check_node(node)
        result = self.script(verb, str(node))
        if result.returncode != 0:
            self.test.fail(f"netns-nodes {verb} {node} failed" + result.describe())

    def _check_node(self, node):
        if not (isinstance(node, int) and 1 <= node <= self.count):
            raise ValueError(f"no node {node!r}: nodes are 1 to {self.count}")
