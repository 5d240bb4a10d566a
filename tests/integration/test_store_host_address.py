"""The node that hosts a static rendezvous's store listens on --local_addr when it is given,
and every agent, that one too, connects to --master_addr. Two different addresses leave the
host unable to reach its own store: it says so at once, naming both and the fix, instead of
waiting out the join timeout with a message about the store being unreachable.

Loopback only: 127.0.0.5 is a loopback address of its own on Linux (all of 127/8 is)."""

import harness
import static_nodes
from harness import EVENT_TIMEOUT


class StoreHostAddress(harness.GangrunTestCase):
    def agent(self, job, node_rank, extra=()):
        return job.start(node_rank, ["--nproc_per_node", 1, "--rdzv_conf", "join_timeout=20", *extra,
                                     *self.fake("--exit", 0)])

    def test_a_local_addr_the_master_addr_does_not_name_is_refused_with_both_addresses(self):
        job = static_nodes.StaticJob(self, 2, master_addr="127.0.0.1")
        host = self.agent(job, 0, extra=("--local_addr", "127.0.0.5"))
        result = self.finish(host, timeout=EVENT_TIMEOUT)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("this node hosts the rendezvous store (node rank 0) and listens on --local_addr 127.0.0.5, "
                      "but every node, this one too, connects to the store at --master_addr 127.0.0.1",
                      result.stderr, result.describe())
        self.assertIn("(--master_addr 127.0.0.5 on every node), or drop --local_addr on this node",
                      result.stderr, result.describe())
        self.assert_nothing_started()

    def test_the_same_address_to_both_runs_the_job(self):
        job = static_nodes.StaticJob(self, 2, master_addr="127.0.0.5")
        self.agent(job, 0, extra=("--local_addr", "127.0.0.5"))
        self.agent(job, 1)
        for node, result in job.finish().items():
            self.assertEqual(result.returncode, 0, f"node {node}" + result.describe())


if __name__ == "__main__":
    harness.main()
