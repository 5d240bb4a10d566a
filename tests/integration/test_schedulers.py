"""The job descriptions of PBS, LSF, Kubeflow's PyTorchJob and SkyPilot: on simulated nodes
(netns_nodes.Nodes), a 2-node job from each system's variables alone, set as that system
sets them, with no node option on the command line.

Kubeflow and SkyPilot start gangrun on every node themselves; here each node's gangrun gets
that node's variables. PBS and LSF run the job script on the first host, which starts
gangrun on every host of the job over ssh (sshd_nodes.SshdNodes; --ssh_port and
--launcher_args only point ssh at the test's servers and keys). Checked: every rank once, on
the node the system's order gives it, meeting at the head's address; the run id from the
job; the dry run naming each variable; a node file that does not list this host refused
with its name. Skipped, with the reason, where network namespaces or OpenSSH are missing.
"""

import glob
import json
import time

import harness
import netns_nodes
import sshd_nodes
from harness import EVENT_TIMEOUT

PORT = 29500  # each node has its own network namespace: any port is free there


class SchedulerJobs(harness.GangrunTestCase):
    def setUp(self):
        reason = netns_nodes.skip_reason() or sshd_nodes.skip_reason()
        if reason:
            self.skipTest(reason)
        super().setUp()

    def start_on(self, nodes, node, args, variables):
        """gangrun ARGS on node NODE with the scheduler's VARIABLES and nothing else of a
        launcher's, its output in files (GangrunTestCase.finish waits for it)."""
        index = len(self._started)
        env = harness.clean_env(GANGRUN_JOB_SECRET=harness.TEST_JOB_SECRET, **variables)
        with open(self.path(f"gangrun.{index}.out"), "wb") as out, \
                open(self.path(f"gangrun.{index}.err"), "wb") as err:
            proc = nodes.popen(node, [harness.GANGRUN, *[str(a) for a in args]], stdout=out, stderr=err,
                               env=env, cwd=self.tmp)
        proc.argv, proc.index, proc.t0 = proc.args, index, time.monotonic()
        self._started.append(proc)
        return proc

    def worker(self):
        return ["--accelerator", "cpu", "--no_python", *self.fake("--print-env", self.path("env.{pid}.json"))]

    def ranks(self):
        """{rank: (node the worker ran on, MASTER_ADDR, WORLD_SIZE, TORCHELASTIC_RUN_ID)}."""
        found = {}
        for name in glob.glob(self.path("env.*.json")):
            with open(name) as f:
                env = json.load(f)["env"]
            found[int(env["RANK"])] = (int(env["GROUP_RANK"]), env["MASTER_ADDR"], env["WORLD_SIZE"],
                                       env["TORCHELASTIC_RUN_ID"])
        return found

    def every_node(self, nodes, variables_of_node, extra=()):
        """Starts gangrun on nodes 1 and 2 with each node's variables; both must exit 0."""
        agents = [self.start_on(nodes, node, [*extra, *self.worker()], variables_of_node(node)) for node in (1, 2)]
        for node, agent in enumerate(agents, start=1):
            done = self.finish(agent, timeout=EVENT_TIMEOUT)
            self.assertEqual(done.returncode, 0, f"node {node}" + done.describe())

    def test_kubeflow_pytorchjob(self):
        nodes = netns_nodes.Nodes(self, 2)
        # A master and one worker; the master's service name is its pod's (node1 here).
        def pod(node):
            return {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
                    "PYTHONUNBUFFERED": "0", "MASTER_ADDR": "node1", "MASTER_PORT": PORT,
                    "WORLD_SIZE": "2", "RANK": node - 1}
        self.every_node(nodes, pod)
        self.assertEqual(self.ranks(), {0: (0, nodes.address(1), "2", "node1"),
                                        1: (1, nodes.address(1), "2", "node1")})

    def test_skypilot(self):
        nodes = netns_nodes.Nodes(self, 2)
        ips = f"{nodes.address(1)}\n{nodes.address(2)}"
        def run_section(node):
            return {"SKYPILOT_NODE_RANK": node - 1, "SKYPILOT_NODE_IPS": ips, "SKYPILOT_NUM_NODES": "2",
                    "SKYPILOT_NUM_GPUS_PER_NODE": "2", "SKYPILOT_TASK_ID": "sky-2026-11-26_train_1"}
        self.every_node(nodes, run_section)
        self.assertEqual(self.ranks(), {rank: (rank // 2, nodes.address(1), "4", "sky-2026-11-26_train_1")
                                        for rank in range(4)})
        dry = self.gangrun(["--dry-run", "-v", *self.worker()], env=harness.clean_env(**run_section(2)))
        self.assertEqual(dry.returncode, 0, dry.describe())
        self.assertIn("(node 1 of 2), world size 4", dry.stdout)
        self.assertRegex(dry.stdout, r"node_rank +1 \(SKYPILOT_NODE_RANK=1\) +job scheduler")
        self.assertRegex(dry.stdout, r"master_addr +\S+ \(the head node: the first of SKYPILOT_NODE_IPS\)")

    def batch_job(self, variables, expected_ranks, hosts_text):
        """PBS and LSF: the job script's gangrun on node1 starts every host over ssh."""
        nodes = netns_nodes.Nodes(self, 2)
        servers = sshd_nodes.SshdNodes(self, nodes, [1, 2])
        ssh = ["--ssh_port", servers.port, "--launcher_args", servers.launcher_args]
        done = self.finish(self.start_on(nodes, 1, [*ssh, *self.worker()], variables), timeout=EVENT_TIMEOUT)
        self.assertEqual(done.returncode, 0, done.describe())
        self.assertIn(hosts_text, done.stderr)
        self.assertEqual(self.ranks(), expected_ranks(nodes))
        return nodes, ssh

    def test_pbs(self):
        node_file = self.path("aux-1742.pbs-server")
        with open(node_file, "w") as f:
            f.write("node1\nnode1\nnode2\nnode2\n")  # a line per slot, as PBS writes it
        pbs = {"PBS_JOBID": "1742.pbs-server", "PBS_NODEFILE": node_file, "PBS_ENVIRONMENT": "PBS_BATCH",
               "PBS_O_WORKDIR": self.tmp}
        nodes, ssh = self.batch_job(
            pbs, lambda nodes: {rank: (rank // 2, nodes.address(1), "4", "1742.pbs-server") for rank in range(4)},
            f"the hosts of PBS job 1742.pbs-server (PBS_NODEFILE={node_file})")

        # A node file that does not list the host the job script runs on.
        with open(node_file, "w") as f:
            f.write("node2\nnode3\n")
        refused = self.finish(self.start_on(nodes, 1, [*ssh, *self.worker()], pbs), timeout=EVENT_TIMEOUT)
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn(f"gangrun runs on node1, and PBS_NODEFILE={node_file} does not list it", refused.stderr)

    def test_lsf(self):
        lsf = {"LSB_JOBID": "5511", "LSB_MCPU_HOSTS": "node1 1 node2 1", "LSB_HOSTS": "node1 node2"}
        self.batch_job(lsf, lambda nodes: {rank: (rank, nodes.address(1), "2", "5511") for rank in range(2)},
                       "the hosts of LSF job 5511 (LSB_MCPU_HOSTS=node1 1 node2 1)")


if __name__ == "__main__":
    harness.main()
