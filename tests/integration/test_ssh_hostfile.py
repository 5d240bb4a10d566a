"""Hostfiles over ssh: gangrun -H HOSTFILE starts itself on every host with OpenSSH, one
static gang across the hosts, as deepspeed does with pdsh. Each host is a simulated node
(netns_nodes.Nodes) running Debian's sshd with keys made by the test (sshd_nodes.SshdNodes);
the local gangrun runs on node1 too, and ssh reads only the test's client config
(--launcher_args "-F CONFIG").

Checked: the dry run's ssh commands; every rank once, with .deepspeed_env's variables, on the host the hostfile order gives it; --include/--exclude with
host:slot filters; a failing rank's exit code on the local gangrun; SIGTERM and SIGKILL of
the local gangrun end every remote agent and worker; a host whose ssh refuses the
connection stops the job with a clear error and leaves nothing running. Skipped, with the
reason, where network namespaces or OpenSSH are missing.
"""

import os
import signal
import subprocess
import time

import harness
import netns_nodes
import sshd_nodes
from harness import EVENT_TIMEOUT

SLEEP_FOREVER = 10 * EVENT_TIMEOUT  # longer than any wait: only gangrun ends these workers


def round_summary(nodes, world, members):
    """The head's line for a round: each member is (host number I, its ranks), named nodeI
    with its address, in node rank order."""
    named = [f"node {rank} (node{host}, {nodes.address(host)}): {ranks}"
             for rank, (host, ranks) in enumerate(members)]
    return f"world size {world}: " + "; ".join(named)


class SshHostfileTest(harness.GangrunTestCase):
    def setUp(self):
        reason = netns_nodes.skip_reason() or sshd_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def cluster(self, count, sshd_on=None):
        nodes = netns_nodes.Nodes(self, count)
        servers = sshd_nodes.SshdNodes(self, nodes, sshd_on or range(1, count + 1))
        return nodes, servers

    def hostfile(self, text):
        path = self.path("hostfile")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_local(self, nodes, servers, args, worker):
        """The local gangrun on node1 with its output in files (GangrunTestCase.finish waits)."""
        index = len(self._started)
        argv = [harness.GANGRUN, "--ssh_port", str(servers.port), "--launcher_args", servers.launcher_args,
                "--accelerator", "cpu", *args, "--no_python", *worker]
        with open(self.path(f"gangrun.{index}.out"), "wb") as out, \
                open(self.path(f"gangrun.{index}.err"), "wb") as err:
            argv = [str(a) for a in argv]
            proc = nodes.popen(1, argv, stdout=out, stderr=err, env=harness.clean_env(),
                               cwd=self.tmp)
        proc.argv, proc.index, proc.t0 = argv, index, time.monotonic()
        self._started.append(proc)
        return proc

    def job_processes(self):
        """Pids of every process whose command line names this test's pid directory: the
        remote agents, their shells and the workers."""
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid() and self.pid_dir in harness.proc_cmdline(int(entry)):
                pids.append(int(entry))
        return pids

    def test_ranks_filters_and_exit_code(self):
        nodes, servers = self.cluster(3)
        hostfile = self.hostfile("# three hosts\nnode1 slots=2\n\nnode2 slots=2\nnode3 slots=2\n")
        worker = self.fake("--print-env", self.path("env.{rank}.json"))
        with open(self.path(".deepspeed_env"), "w") as f:  # in the local gangrun's directory
            f.write("GANGRUN_SSH_TEST_VALUE=from the file\n")

        done = self.finish(self.start_local(nodes, servers, ["-H", hostfile], worker), timeout=EVENT_TIMEOUT)
        self.assertExit(done, 0)
        self.assertIn(round_summary(nodes, 6, [(1, "ranks 0-1"), (2, "ranks 2-3"), (3, "ranks 4-5")]), done.stderr)
        for rank, env in self.env_of_ranks(6).items():
            self.assertEqual((env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["GROUP_RANK"]),
                             (str(rank), str(rank % 2), "6", str(rank // 2)))
            # The store's address as a number, as each node's agent reached it.
            self.assertEqual(env["MASTER_ADDR"], nodes.address(1))
            self.assertEqual(env["GANGRUN_SSH_TEST_VALUE"], "from the file")

        # The dry run prints each host's ssh command and starts nothing.
        dry = self.gangrun(["--dry-run", "-H", hostfile, "--ssh_port", servers.port, "--no_python", *worker])
        self.assertExit(dry, 0)
        self.assertEqual(dry.stdout.count("  ssh -o BatchMode=yes -p 2222 -- node"), 3, dry.stdout)
        self.assertIn("--node_rank 2 --master_addr node1", dry.stdout)

        # deepspeed's filters: node1 left out, one slot of node3.
        done = self.finish(self.start_local(nodes, servers, ["-H", hostfile, "--include", "node3:1@node2"], worker),
                           timeout=EVENT_TIMEOUT)
        self.assertExit(done, 0)
        self.assertIn(round_summary(nodes, 3, [(2, "ranks 0-1"), (3, "rank 2")]), done.stderr)
        self.assertEqual(self.env_of_ranks(3)[2]["MASTER_ADDR"], nodes.address(2))
        for node in (2, 3):
            servers.assert_only_sshd_left(node)
        done = self.finish(self.start_local(nodes, servers, ["-H", hostfile, "--exclude", "node2@node1:0"], worker),
                           timeout=EVENT_TIMEOUT)
        self.assertExit(done, 0)
        self.assertIn(round_summary(nodes, 3, [(1, "rank 0"), (3, "ranks 1-2")]), done.stderr)

        # A failing rank on a remote host: the job's code on the local gangrun.
        failing = self.fake("--only-rank", "3", "--exit", "7", "--except-rank", "3", "--sleep", SLEEP_FOREVER)
        done = self.finish(self.start_local(nodes, servers, ["-H", hostfile], failing), timeout=EVENT_TIMEOUT)
        self.assertExit(done, 7)
        self.assert_dead(self.job_processes(), what="remote agents and workers")

    def check_teardown(self, signal_number):
        nodes, servers = self.cluster(2)
        hostfile = self.hostfile("node1 slots=2\nnode2 slots=2\n")
        local = self.start_local(nodes, servers, ["-H", hostfile], self.fake("--sleep", SLEEP_FOREVER))
        workers = self.wait_pid_files(4)
        remote = self.job_processes()
        self.assertGreater(len(remote), len(workers), "the remote agents were not found")
        os.kill(local.pid, signal_number)
        local.wait(timeout=EVENT_TIMEOUT)
        self.assert_dead([*workers.values(), *remote], what="remote agents and workers")
        for node in (1, 2):
            servers.assert_only_sshd_left(node)

    def test_sigterm_ends_every_remote_process(self):
        self.check_teardown(signal.SIGTERM)

    def test_sigkill_ends_every_remote_process(self):
        self.check_teardown(signal.SIGKILL)

    def test_host_refusing_ssh(self):
        nodes, servers = self.cluster(2, sshd_on=[1])  # node2 runs no sshd: connection refused
        hostfile = self.hostfile("node1 slots=1\nnode2 slots=1\n")
        done = self.finish(self.start_local(nodes, servers, ["-H", hostfile], self.fake("--sleep", SLEEP_FOREVER)),
                           timeout=EVENT_TIMEOUT)
        self.assertExit(done, 3)
        self.assertIn("ssh to node2 failed", done.stderr)
        self.assert_dead(self.job_processes(), what="remote agents and workers")
        servers.assert_only_sshd_left(1)


if __name__ == "__main__":
    harness.main()
