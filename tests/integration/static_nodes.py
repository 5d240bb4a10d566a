"""A static job over several nodes, for integration tests: one agent per node, node rank 0
hosting the rendezvous store at --master_addr:--master_port, every node started with the
same four options (docs/multi-node.md).

    job = static_nodes.StaticJob(self, 2)                   # on loopback, at a free port
    agents = job.start_all(lambda node_rank: ["--nproc_per_node", 1, *worker])
    results = job.finish()                                  # {node rank: harness.Result}

On simulated nodes (netns_nodes.Nodes), node rank K runs on node K+1 and the store is on
node 1: StaticJob(self, 2, nodes=nodes, master_port=29500).

Every agent runs in a session (and process group) of its own, stdin from /dev/null, its
output in files of the test's directory, and is registered with the test as
GangrunTestCase.start does: test.finish, test.stderr_of and test.wait_stderr take it, and
the test's teardown ends whatever is left (on simulated nodes, Nodes.close kills its group).
"""

import os
import signal
import subprocess
import time

import harness

LOOPBACK = "127.0.0.1"


class StaticJob:
    """A static job of NNODES nodes for TEST (a harness.GangrunTestCase). Its store is at
    MASTER_ADDR (loopback, or node 1's address on NODES) and MASTER_PORT (harness.free_port()
    unless given). Agents run PROGRAM (gangrun, or a peer launcher with the same options)
    with ENV (the test's clean environment with the job's secret unless given); COMMAND
    goes before the options (a subcommand: "preflight"); HOSTNAME, on simulated nodes,
    renames each node's host before its agent starts."""

    def __init__(self, test, nnodes, *, master_addr=None, master_port=None, env=None, nodes=None, command=(),
                 program=harness.GANGRUN, hostname=None):
        self.test = test
        self.nnodes = nnodes
        self.nodes = nodes
        self.master_addr = master_addr or (nodes.address(1) if nodes is not None else LOOPBACK)
        self.master_port = master_port if master_port is not None else harness.free_port()
        self.env = env if env is not None else harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET)
        self.command = list(command)
        self.program = program
        self.hostname = hostname
        self.agents = {}  # node rank -> the agent started last for it

    def args(self, node_rank):
        """The options that place node NODE_RANK in this job."""
        return [*self.command, "--nnodes", self.nnodes, "--node_rank", node_rank, "--master_addr", self.master_addr,
                "--master_port", self.master_port]

    def start(self, node_rank, args, env=None):
        """Starts the agent of node NODE_RANK with ARGS (its own options, then the worker)
        after the job's options, with ENV instead of the job's when given; returns it."""
        argv = [str(a) for a in (self.program, *self.args(node_rank), *args)]
        if self.nodes is not None and self.hostname is not None:
            # The shell execs the agent, so the pid is still the agent's.
            argv = ["sh", "-c", 'hostname "$0" && exec "$@"', self.hostname, *argv]
        test = self.test
        index = len(test._started)
        with open(test.path(f"gangrun.{index}.out"), "wb") as out, open(test.path(f"gangrun.{index}.err"), "wb") as err:
            options = dict(stdout=out, stderr=err, env=self.env if env is None else env, cwd=test.tmp)
            if self.nodes is None:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, **options)
            else:
                proc = self.nodes.popen(node_rank + 1, argv, **options)
        proc.argv, proc.index, proc.t0 = argv, index, time.monotonic()
        test._started.append(proc)
        self.agents[node_rank] = proc
        return proc

    def start_all(self, args_of, order=None):
        """{node rank: agent} of every node, started in ORDER (default: node rank 0 first),
        node K with ARGS_OF(K)."""
        for node_rank in order if order is not None else range(self.nnodes):
            self.start(node_rank, args_of(node_rank))
        return dict(sorted(self.agents.items()))

    def finish(self, timeout=2 * harness.EVENT_TIMEOUT, hung_ok=False):
        """finish(TEST, the agents started last for each node, ...)."""
        return finish(self.test, dict(sorted(self.agents.items())), timeout, hung_ok)


def finish(test, agents, timeout=2 * harness.EVENT_TIMEOUT, hung_ok=False):
    """{key: harness.Result} of every agent of AGENTS ({key: agent} started by StaticJob or
    GangrunTestCase.start), all waited for together for at most TIMEOUT seconds. Agents still
    running then are killed (their process groups); the test fails with every agent's output,
    unless HUNG_OK, where their Result has returncode None."""
    deadline = time.monotonic() + timeout
    hung = []
    for key, agent in agents.items():
        try:
            agent.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(key)
    for key in hung:
        # Not reaped yet, so its pid is still the id of its own group.
        os.killpg(agents[key].pid, signal.SIGKILL)
        agents[key].wait(timeout=harness.EVENT_TIMEOUT)
    results = {key: test._started_result(agent) for key, agent in agents.items()}
    for key in hung:
        results[key].returncode = None
    if hung and not hung_ok:
        test.fail(f"agents {hung} did not finish within {timeout}s (killed now)" + describe(results))
    return results


def describe(results):
    """Every agent's command, exit code and output tails, for a failure message."""
    return "".join(f"\n=== agent {key}:{result.describe()}" for key, result in results.items())
