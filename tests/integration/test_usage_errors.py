"""Bad input is exit 2 with a message naming the option and the problem, and nothing is
started (DESIGN.md section 1; STYLE.md point 2: validate everything, then act)."""

import json
import os

import harness
from harness import GangrunTestCase, option_named


class UsageErrors(GangrunTestCase):
    def check(self, options, must_name=(), env=None, with_program=True):
        """gangrun OPTIONS [fake worker] exits 2, starts nothing, and stderr names each of
        MUST_NAME (options in either spelling, or plain text; a tuple gives alternatives,
        e.g. the short and the long name)."""
        program = self.fake("--exit", 0) if with_program else []
        result = self.gangrun([*options, *program], env=env, timeout=30)
        self.assertExit(result, 2)
        for name in must_name:
            alternatives = name if isinstance(name, tuple) else (name,)
            found = any(option_named(result.stderr, n) if n.startswith("--") else n in result.stderr
                        for n in alternatives)
            self.assertTrue(found, f"stderr does not name {name!r}" + result.describe())
        self.assertTrue(result.stderr.strip(), "no message at all")
        self.assert_nothing_started()
        return result

    def test_bad_process_counts(self):
        cases = [
            (["--nproc_per_node", "0"], ["--nproc_per_node"]),
            (["--nproc_per_node=-2"], ["--nproc_per_node"]),
            (["--nproc_per_node", "abc"], ["--nproc_per_node"]),
            (["--nproc-per-node", "1.5"], ["--nproc_per_node"]),
            (["--num_processes", "0"], ["--num_processes"]),
            (["--num_processes=-4"], ["--num_processes"]),
            (["--num_processes", "four"], ["--num_processes"]),
            (["--num_gpus", "0"], ["--num_gpus"]),
            (["--num_gpus", "x"], ["--num_gpus"]),
        ]
        for options, names in cases:
            with self.subTest(options=options):
                self.check(options, names)

    def test_negative_count_as_separate_word(self):
        # "-2" may be taken for an option; either way it is a usage error.
        self.check(["--nproc_per_node", "-2"])

    def test_num_processes_not_divisible_by_nnodes(self):
        self.check(["--num_processes", "3", "--nnodes", "2", "--master_port", harness.free_port()], ["--num_processes"])

    def test_conflicting_counts_name_both(self):
        self.check(["--nproc_per_node", "2", "--num_processes", "4"], ["--nproc_per_node", "--num_processes"])
        self.check(["--nproc_per_node", "2", "--num_gpus", "3"], ["--nproc_per_node", "--num_gpus"])

    def test_bad_ports(self):
        for options in (["--master_port", "65536"], ["--master_port=-1"], ["--master_port", "abc"],
                        ["--master-port", "70000"]):
            with self.subTest(options=options):
                self.check(options, ["--master_port"])

    def test_bad_nnodes_and_node_rank(self):
        self.check(["--nnodes", "3:2"], ["--nnodes"])
        self.check(["--nnodes", "0"], ["--nnodes"])
        self.check(["--nnodes", "x"], ["--nnodes"])
        self.check(["--nnodes", "2", "--node_rank", "2", "--master_port", harness.free_port()], ["--node_rank"])
        self.check(["--node_rank=-1"], ["--node_rank"])

    def test_module_with_no_python(self):
        result = self.check(["-m", "--no_python"], ["--no_python"])
        self.assertTrue("-m" in result.stderr or "module" in result.stderr, result.describe())

    def test_unknown_option(self):
        self.check(["--bogus-option-xyz", "1"], ["bogus-option-xyz"])

    def test_other_bad_values(self):
        cases = [
            (["--max_restarts=-1"], ["--max_restarts"]),
            (["--max_restarts", "many"], ["--max_restarts"]),
            (["--term-timeout=-1"], ["--term_timeout"]),
            (["--term-timeout", "soon"], ["--term_timeout"]),
            (["-r", "4"], [("-r", "redirects")]),
            (["--tee", "9"], ["tee"]),
            (["--output", "sideways"], ["--output"]),
            (["--local_ranks_filter", "a,b"], ["--local_ranks_filter"]),
        ]
        for options, names in cases:
            with self.subTest(options=options):
                self.check(options, names)

    def test_missing_program(self):
        self.check(["--nproc_per_node", "2"], with_program=False)

    def test_bad_value_in_environment_names_the_variable(self):
        env = harness.clean_env(GANGRUN_NPROC_PER_NODE="abc")
        self.check([], ["GANGRUN_NPROC_PER_NODE"], env=env)
        env = harness.clean_env(PET_NPROC_PER_NODE="0")
        self.check([], ["PET_NPROC_PER_NODE"], env=env)


class ConfigFileErrors(GangrunTestCase):
    def test_missing_config_file(self):
        path = self.path("no-such-config.json")
        self.check_config(path)

    def test_unreadable_config_file(self):
        path = self.path("a-directory.json")
        os.mkdir(path)
        self.check_config(path)

    def test_malformed_config_file(self):
        path = self.path("malformed.json")
        with open(path, "w") as f:
            f.write('{"nproc_per_node": 2,,\n')
        self.check_config(path)

    def test_config_value_of_wrong_kind(self):
        path = self.path("wrong.json")
        with open(path, "w") as f:
            json.dump({"nproc_per_node": "abc"}, f)
        result = self.check_config(path)
        self.assertTrue(option_named(result.stderr, "nproc_per_node"), result.describe())

    def test_config_not_an_object(self):
        path = self.path("list.json")
        with open(path, "w") as f:
            json.dump([1, 2], f)
        self.check_config(path)

    def check_config(self, path):
        result = self.gangrun(["--config", path, *self.fake("--exit", 0)], timeout=30)
        self.assertExit(result, 2)
        self.assertIn(path, result.stderr, "the message should name the config file")
        self.assert_nothing_started()
        return result


if __name__ == "__main__":
    harness.main()
