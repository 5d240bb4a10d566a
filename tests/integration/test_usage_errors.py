"""Bad input is exit 2 with a message naming the option and the problem, and nothing is
started: gangrun validates everything before it acts."""

import json
import os

import harness
from harness import GangrunTestCase, option_named


class UsageErrorCase(GangrunTestCase):
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


class UsageErrors(UsageErrorCase):
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

    def test_bad_rendezvous_options(self):
        c10d = ["--rdzv_backend", "c10d", "--rdzv_endpoint", "node0:29400"]
        cases = [
            (["--rdzv_backend", "etcd"], ["--rdzv_backend", "etcd is not supported", "c10d"]),
            (["--rdzv-backend", "ETCD-V2"], ["--rdzv_backend", "etcd-v2 is not supported"]),
            (["--rdzv_backend", "zeus"], ["--rdzv_backend", "expected static or c10d"]),
            (["--rdzv_backend", "c10d", "--rdzv_endpoint", "node0:99999"],
             ["--rdzv_endpoint", "HOST[:PORT]"]),
            (["--rdzv-backend", "c10d", "--rdzv-endpoint", "::1"], ["--rdzv_endpoint", "brackets"]),
            ([*c10d, "--rdzv_conf", "bogus=1"], ["--rdzv_conf", "bogus", "join_timeout"]),
            ([*c10d, "--rdzv-conf", "join_timeout"], ["--rdzv_conf", "KEY=VALUE"]),
            ([*c10d, "--rdzv_conf", "read_timeout="], ["--rdzv_conf", "no value"]),
            (["--rdzv_backend", "c10d"], ["--rdzv_backend c10d needs --rdzv_endpoint"]),
            (["--nnodes", "1:4"], ["--nnodes", "elastic range", "--rdzv_backend c10d"]),
            (["--nnodes", "1:4", "--rdzv_endpoint", "node0:29400"], ["--nnodes", "--rdzv_backend c10d"]),
        ]
        for options, names in cases:
            with self.subTest(options=options):
                self.check(options, names)

    def test_bad_rendezvous_values_in_environment_name_the_variable(self):
        self.check([], ["PET_RDZV_ENDPOINT"], env=harness.clean_env(PET_RDZV_ENDPOINT="a:b:c"))
        self.check([], ["GANGRUN_RDZV_CONF", "store_type"],
                   env=harness.clean_env(GANGRUN_RDZV_CONF="store_type=file"))
        self.check([], ["PET_RDZV_BACKEND=c10d needs --rdzv_endpoint"],
                   env=harness.clean_env(PET_RDZV_BACKEND="c10d"))

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


class NumericRanges(UsageErrorCase):
    def test_term_timeout_out_of_range(self):
        # 1e16 s used to overflow the grace period into "SIGKILL at once".
        for value in ("1e16", "1e308", "inf", "nan", "-1", "86401"):
            with self.subTest(value=value):
                result = self.check([f"--term-timeout={value}"], ["--term_timeout", value])
                self.assertIn("from 0 to 86400", result.stderr, result.describe())

    def test_other_numbers_out_of_range(self):
        cases = [
            (["--monitor_interval", "1e308"], ["--monitor_interval", "from 0 to 86400"]),
            (["--max_restarts", "2147483647"], ["--max_restarts", "from 0 to 1000000"]),
            (["--nnodes", "2000000000", "--nproc_per_node", "2", "--master_port", harness.free_port()],
             ["--nproc_per_node", "2147483647"]),
        ]
        for options, names in cases:
            with self.subTest(options=options):
                self.check(options, names)


class SignalsThatCannotStop(UsageErrorCase):
    def test_signals_that_cannot_mean_stop(self):
        for name in ("SIGCHLD", "CONT", "STOP", "KILL", "TSTP", "TTIN", "TTOU", "WINCH", "URG",
                     "SEGV", "BUS", "FPE", "ILL", "ABRT", "PIPE"):
            with self.subTest(signal=name):
                result = self.check(["--signals_to_handle", f"SIGTERM,{name}"],
                                    ["--signals_to_handle", f"'{name}' cannot be handled"])
                self.assertIn("such as SIGTERM", result.stderr, result.describe())

    def test_usr1_is_accepted(self):
        result = self.gangrun(["--signals_to_handle", "SIGTERM,SIGUSR1", *self.fake("--exit", 0)])
        self.assertExit(result, 0)


class UnwritableOutputs(UsageErrorCase):
    def test_report_into_a_missing_directory(self):
        report = self.path("no-such-dir", "report.json")
        result = self.check(["--report", report], ["--report", self.path("no-such-dir"), "does not exist"])
        self.assertFalse(os.path.exists(self.path("no-such-dir")))

    def test_report_that_is_a_directory(self):
        self.check(["--report", self.tmp], ["--report", "is a directory"])

    def test_report_checked_in_a_dry_run_too(self):
        self.check(["--dry-run", "--report", self.path("no-such-dir", "r.json")], ["--report"])

    def test_log_dir_that_is_a_file(self):
        file = self.path("a-file")
        with open(file, "w"):
            pass
        self.check(["--log_dir", file], ["--log_dir", "is not a directory"])
        self.check(["--log_dir", os.path.join(file, "sub")], ["--log_dir", "is not a directory"])

    def test_unwritable_log_dir(self):
        if os.geteuid() == 0:
            self.skipTest("root may write in a directory without write permission")
        locked = self.path("locked")
        os.mkdir(locked, 0o555)
        self.check(["--log_dir", os.path.join(locked, "logs")], ["--log_dir", "cannot write in"])

    def test_missing_tmpdir_without_log_dir(self):
        missing = self.path("no-such-tmp")
        result = self.check([], ["TMPDIR=" + missing, "--log_dir"],
                            env=harness.clean_env(TMPDIR=missing))
        self.assertFalse(os.path.exists(missing))


class ProcessLimits(UsageErrorCase):
    def test_worker_count_beyond_any_pid_space(self):
        # 2 processes per worker: 6,000,032 is beyond the largest kernel.pid_max (2^22).
        result = self.check(["--nproc_per_node", "3000000"], ["--nproc_per_node", "3000000", "processes"])
        self.assertIn("give fewer workers per node", result.stderr, result.describe())

    def test_worker_count_beyond_this_machines_limits(self):
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        with open("/proc/sys/kernel/threads-max") as f:
            threads_max = int(f.read())
        limit = min(pid_max, threads_max)
        if limit // 2 > 2_000_000:
            self.skipTest(f"this machine allows {limit} processes")
        workers = limit // 2 + 1
        result = self.check(["--nproc_per_node", workers], ["--nproc_per_node", str(workers), "processes"])
        self.assertTrue("kernel.pid_max" in result.stderr or "kernel.threads-max" in result.stderr,
                        result.describe())


class MissingDevices(UsageErrorCase):
    def no_device_env(self):
        """No CUDA, Level Zero or ROCm driver, whatever this machine has."""
        sysfs = self.path("empty-sysfs")
        os.mkdir(sysfs)
        return harness.clean_env(GANGRUN_CUDA_LIBRARY=self.path("no-libcuda.so.1"),
                                 GANGRUN_LEVEL_ZERO_LIBRARY=self.path("no-libze_loader.so.1"),
                                 GANGRUN_SYSFS_ROOT=sysfs)

    def test_nproc_per_node_gpu_names_the_missing_gpu_kinds(self):
        result = self.check(["--nproc_per_node", "gpu"], ["--nproc_per_node gpu: no GPU found (CUDA: "],
                            env=self.no_device_env())
        for kind in ("Intel XPU: ", "AMD ROCm: ", "give the number of workers"):
            self.assertIn(kind, result.stderr, result.describe())
        self.assertNotIn("cpu device", result.stderr, result.describe())

    def test_nproc_per_node_xpu_names_level_zero(self):
        result = self.check(["--nproc_per_node", "xpu"], ["--nproc_per_node xpu: no Intel XPU"],
                            env=self.no_device_env())
        self.assertNotIn("cpu device", result.stderr, result.describe())


class ConfigFileErrors(UsageErrorCase):
    def test_config_that_never_ends(self):
        # /dev/zero used to be read until memory ran out.
        result = self.check_config("/dev/zero")
        self.assertIn("character device", result.stderr, result.describe())

    def test_config_fifo_without_writer(self):
        fifo = self.path("config.fifo")
        os.mkfifo(fifo)
        result = self.check_config(fifo)
        self.assertIn("FIFO", result.stderr, result.describe())

    def test_config_too_large(self):
        path = self.path("big.json")
        with open(path, "w") as f:
            f.write('{"nnodes": 1' + " " * (2 * 1024 * 1024) + "}")
        result = self.check_config(path)
        self.assertIn("larger than 1024 KiB", result.stderr, result.describe())

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
