"""Before gangrun starts itself on other nodes (through srun outside a step, or over ssh
with a hostfile), it resolves the program here: a misspelled script is one error from
this gangrun, with the exit code a local launch gives (127), and no srun or ssh is ever
run. srun and ssh are stand-ins on PATH that only record that they ran, so nothing here
needs a cluster or an sshd: a real one would only be reached after the check."""

import os
import stat

import harness
from harness import GangrunTestCase

RECORDING_TOOL = """#!/bin/sh
# stands in for {name}: records that it ran, and fails
printf '%s\\n' "$@" > "{out}/{name}.ran"
exit 1
"""


class RemoteStartChecks(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.bin = self.path("bin")
        os.mkdir(self.bin)
        for name in ("srun", "ssh"):
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(RECORDING_TOOL.format(name=name, out=self.tmp))
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def env(self, **extra):
        return harness.clean_env(PATH=self.bin + os.pathsep + os.environ.get("PATH", ""), **extra)

    def assert_found_here(self, done):
        self.assertExit(done, 127)
        self.assertIn("script trian.py not found", done.stderr)
        for name in ("srun", "ssh"):
            self.assertFalse(os.path.exists(self.path(f"{name}.ran")), f"{name} was run" + done.describe())

    def test_a_misspelled_script_is_found_before_srun_starts_any_node(self):
        env = self.env(SLURM_JOB_ID="12", SLURM_JOB_NUM_NODES="2", SLURM_JOB_NODELIST="nohost[1-2]")
        for dry in ([], ["--dry-run"]):
            with self.subTest(dry=dry):
                self.assert_found_here(self.gangrun([*dry, "--launcher", "slurm", "trian.py"], env=env))

    def test_a_misspelled_script_is_found_before_ssh_reaches_any_host(self):
        hostfile = self.path("hostfile")
        with open(hostfile, "w") as f:
            f.write("nohost1.invalid slots=1\nnohost2.invalid slots=1\n")
        for dry in ([], ["--dry-run"]):
            with self.subTest(dry=dry):
                self.assert_found_here(self.gangrun([*dry, "-H", hostfile, "trian.py"], env=self.env()))


if __name__ == "__main__":
    harness.main()
