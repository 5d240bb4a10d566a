"""What the tests that submit gangrun jobs to the local Slurm cluster share (test_slurm.py,
test_slurm_torch.py): one cluster per TestCase, the job's environment, train.py, and waiting
for a job's end.

The recipes of scripts/slurm/ call `gangrun` and `train.py` by name, as a user's would:
each test puts a directory with a `gangrun` link to the built binary first on the job's PATH
(sbatch exports the submitting environment to the job), and writes train.py into its
private directory, the job's working directory; PYTHON_EXEC names the interpreter gangrun
runs it with.
"""

import os
import re
import sys

import harness
import slurm_cluster
from harness import EVENT_TIMEOUT, GANGRUN

RECIPES = os.path.join(harness.REPO, "scripts", "slurm")
NODES = 3


def store_port(job, step=0):
    """The store port gangrun derives under Slurm from the job id and the step id."""
    return 20000 + (job * 16 + step) % 12000


def labelled(output, task):
    """The lines that `srun --label` gave task TASK in OUTPUT, without the label, as one text."""
    found = (re.fullmatch(r" *(\d+): (.*)", line) for line in output.splitlines())
    return "\n".join(m.group(2) for m in found if m and int(m.group(1)) == task)


class SlurmJobTestCase(harness.GangrunTestCase):
    """A cluster of NODES nodes for the class; per test, an output directory self.out and
    the job environment self.job_env (gangrun on PATH, PYTHON_EXEC = self.python, TMPDIR in
    the test's directory)."""

    python = sys.executable

    @classmethod
    def setUpClass(cls):
        cls.cluster = slurm_cluster.Cluster.for_class(cls, nodes=NODES)

    def setUp(self):
        super().setUp()
        self.out = self.path("out")
        os.mkdir(self.out)
        bin_dir = self.path("bin")
        os.mkdir(bin_dir)
        os.symlink(GANGRUN, os.path.join(bin_dir, "gangrun"))
        # gangrun's run directories (and anything else the jobs put in TMPDIR) stay in the
        # test's directory, removed with it, even where Slurm kills an agent mid-teardown.
        job_tmp = self.path("tmp")
        os.mkdir(job_tmp)
        self.job_env = self.cluster.env(PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHON_EXEC=self.python,
                                        TMPDIR=job_tmp)

    def write_train(self, script, *args):
        """Writes the job's train.py: it runs Python script SCRIPT with the arguments ARGS."""
        argv = [script, *map(str, args)]
        with open(self.path("train.py"), "w") as f:
            f.write(f"import runpy, sys\nsys.argv = {argv!r}\nrunpy.run_path({script!r}, run_name='__main__')\n")

    def submit(self, script, **env):
        """Submits a recipe of scripts/slurm/ (by name) or a script's text, from the test's
        directory, with the job environment plus ENV; returns the job id."""
        path = script if "\n" in script else os.path.join(RECIPES, script)
        return self.cluster.sbatch(path, cwd=self.tmp, env={**self.job_env, **{k: str(v) for k, v in env.items()}})

    def end_of(self, job, timeout=2 * EVENT_TIMEOUT):
        """Waits for the job's end, then for every process of it to be gone; returns its
        JobEnd and its output."""
        end = self.cluster.wait_job_end(job, timeout)
        harness.wait_for(lambda: not self.cluster.leftover_processes(job), EVENT_TIMEOUT,
                         f"the processes of job {job} to end")
        return end, self.cluster.job_output(job)

    def assert_end(self, job, state, exit_code, timeout=2 * EVENT_TIMEOUT):
        """end_of(), checking the job's state and exit code; returns its output."""
        end, output = self.end_of(job, timeout)
        self.assertEqual((end.state, end.exit_code), (state, exit_code), f"job {job}: {end}\n{output}")
        return output
