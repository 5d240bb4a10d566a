"""Every problem in the options at once (lib/config/problems.hpp).

Layering (lib/config/layering.hpp) goes on past a bad config file entry, so
its problems and those of the values that do not type are reported together.

A command line with several independent mistakes is refused with all of them
named, each with the option, its value and where it came from, exit 2, and
nothing started: the worker would create a marker file, which must not exist.
"""

import os

import harness
from harness import GangrunTestCase


class EveryProblemAtOnce(GangrunTestCase):
    def test_three_independent_mistakes_are_all_reported(self):
        marker = self.path("worker-started")
        result = self.gangrun(["--nnodes", "two", "--accelerator", "tpu", "--max_restarts", "lots",
                               *self.fake("--touch", marker, "--exit", 0)])
        self.assertExit(result, 2)
        self.assertIn("3 problems", result.stderr, result.describe())
        self.assertIn("--nnodes: 'two' is not a node count", result.stderr, result.describe())
        self.assertIn("--accelerator: 'tpu' is not an accelerator", result.stderr, result.describe())
        self.assertIn("--max_restarts: 'lots'", result.stderr, result.describe())
        self.assertFalse(os.path.exists(marker), "the worker was started")
        self.assert_nothing_started()

    def test_mistakes_from_different_layers_name_where_each_came_from(self):
        marker = self.path("worker-started")
        env = harness.clean_env(GANGRUN_TERM_TIMEOUT="soon", PET_COLOR="sometimes")
        result = self.gangrun(["--nproc_per_node", "many", *self.fake("--touch", marker, "--exit", 0)],
                              env=env)
        self.assertExit(result, 2)
        for where in ("--nproc_per_node: 'many'", "GANGRUN_TERM_TIMEOUT: ", "PET_COLOR: "):
            self.assertIn(where, result.stderr, result.describe())
        self.assertFalse(os.path.exists(marker), "the worker was started")

    def test_a_variable_a_config_file_and_the_command_line_are_all_reported(self):
        # Layering goes on past the config file's bad entry, so the typing
        # still reports the variable's and the command line's values.
        marker = self.path("worker-started")
        config = self.path("job.json")
        with open(config, "w") as handle:
            handle.write('{"max_restarts": 1, "standalone": "yes", "nprocs": 4}')
        env = harness.clean_env(GANGRUN_TERM_TIMEOUT="soon")
        result = self.gangrun(["--config", config, "--nnodes", "two",
                               *self.fake("--touch", marker, "--exit", 0)], env=env)
        self.assertExit(result, 2)
        self.assertIn("4 problems; nothing was started:", result.stderr, result.describe())
        for where in (config + ': key "standalone": expected true or false',
                      config + ': key "nprocs": unknown option',
                      "GANGRUN_TERM_TIMEOUT: ",
                      "--nnodes: 'two' is not a node count"):
            self.assertIn(where, result.stderr, result.describe())
        self.assertFalse(os.path.exists(marker), "the worker was started")
        self.assert_nothing_started()

    def test_a_hostfile_that_cannot_be_read_is_reported_beside_a_bad_value(self):
        # The hostfile is read after every value typed; when one does not,
        # it is still read on its own so that both problems come in one run.
        marker = self.path("worker-started")
        missing = self.path("no-such-hostfile")
        result = self.gangrun(["--hostfile", missing, "--max_restarts", "lots",
                               *self.fake("--touch", marker, "--exit", 0)])
        self.assertExit(result, 2)
        self.assertIn("2 problems; nothing was started:", result.stderr, result.describe())
        self.assertIn("--max_restarts: 'lots'", result.stderr, result.describe())
        self.assertIn(missing, result.stderr, result.describe())
        self.assertFalse(os.path.exists(marker), "the worker was started")
        self.assert_nothing_started()

    def test_one_mistake_reads_as_before(self):
        result = self.gangrun(["--max_restarts", "lots", *self.fake("--exit", 0)])
        self.assertExit(result, 2)
        self.assertNotIn("problems", result.stderr, result.describe())
        self.assertIn("--max_restarts: 'lots'", result.stderr, result.describe())


if __name__ == "__main__":
    harness.main()
