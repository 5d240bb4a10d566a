"""The job registry that `gangrun stacks` reads: what an agent writes there, and what it says
when it cannot.

Each agent keeps a file in this user's registry directory ($XDG_RUNTIME_DIR/gangrun, else
$TMPDIR/gangrun-UID) while it runs. A multi-node job's file names the store and, with a job
secret, a key derived from it that can ask for stacks and nothing else: never the secret, which
a SIGKILL would leave behind on disk. A directory of another user's in that place leaves the job
unregistered, and the agent says so.
"""

import glob
import json
import os

import harness
import static_nodes
from harness import EVENT_TIMEOUT
from test_control_plane import SECRET, ControlPlaneCase


class Registry(ControlPlaneCase):
    def test_a_multi_node_jobs_entry_holds_a_stacks_key_and_never_the_secret(self):
        runtime = self.path("runtime")
        os.mkdir(runtime, 0o700)
        env = harness.clean_env(GANGRUN_JOB_SECRET=SECRET, XDG_RUNTIME_DIR=runtime)
        job = static_nodes.StaticJob(self, 2, master_port=self.port, env=env)  # on loopback
        job.start_all(lambda rank: ["--nproc_per_node", 1, *self.worker("--wait-file", self.path("go"), 300)])
        self.wait_ready(2)
        entries = harness.wait_for(lambda: glob.glob(os.path.join(runtime, "gangrun", "*.json")) or None,
                                   EVENT_TIMEOUT, "the agents' registry files")
        for entry in entries:
            text = harness.read_text(entry)
            self.assertNotIn(SECRET, text, entry)
            nodes = json.loads(text)["nodes"]
            self.assertRegex(nodes["stacks_key"], "^[0-9a-f]{64}$", entry)
            self.assertEqual(os.stat(entry).st_mode & 0o077, 0, f"{entry} is readable by others")
        self.release()
        for result in job.finish().values():
            self.assertExit(result, 0)

    def test_another_users_registry_directory_is_named(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to give a directory to another user")
        tmp = self.path("tmp")
        os.mkdir(tmp)
        taken = os.path.join(tmp, f"gangrun-{os.getuid()}")
        os.mkdir(taken, 0o700)
        os.chown(taken, 65534, 65534)  # nobody's, as a squatter's would be
        env = {k: v for k, v in harness.clean_env(TMPDIR=tmp).items() if k != "XDG_RUNTIME_DIR"}
        result = self.gangrun(["--nproc_per_node", 1, *self.fake("--exit", 0)], env=env)
        self.assertExit(result, 0)
        self.assertIn("gangrun stacks will not find this job", result.stderr)
        self.assertIn(taken, result.stderr)


if __name__ == "__main__":
    harness.main()
