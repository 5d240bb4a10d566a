"""How PROGRAM becomes a command (docs/flags.md, "Command line": which program runs), run for real:
executables directly (PATH lookup), *.py and non-executable files through PYTHON -u,
-m MODULE, --no_python, the interpreter choice (--python > PYTHON_EXEC > python3 on PATH),
and the ${local_rank} macro."""

import os
import stat

import harness
from harness import GangrunTestCase, TEST_PYTHON

RECORDING_PYTHON = """#!/bin/sh
# stands in for a Python interpreter: records who ran and with which arguments
printf '%s\\n' "{name}" "$@" > "{out}/ran.$RANK"
"""

PY_SCRIPT = """import os, sys
with open(os.path.join({out!r}, "ran." + os.environ["RANK"]), "w") as f:
    f.write("\\n".join(["script"] + sys.argv) + "\\n")
"""


class ProgramResolution(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.bin = self.path("bin")
        os.mkdir(self.bin)
        self.out = self.path("out")
        os.mkdir(self.out)

    def make_executable(self, path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def recording_python(self, name):
        return self.make_executable(os.path.join(self.bin, name), RECORDING_PYTHON.format(name=name, out=self.out))

    def ran(self, rank=0):
        path = os.path.join(self.out, f"ran.{rank}")
        self.assertTrue(os.path.exists(path), f"rank {rank} did not run")
        with open(path) as f:
            return f.read().splitlines()

    def env_with_bin_on_path(self, **extra):
        env = harness.clean_env(**extra)
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        return env

    def test_executable_found_on_path(self):
        os.symlink(harness.FAKE, os.path.join(self.bin, "my-fake-worker"))
        result = self.gangrun(["--nproc_per_node", 2, "my-fake-worker", "--pid-dir", self.pid_dir,
                               "--print-env", self.path("env.{rank}.json")], env=self.env_with_bin_on_path())
        self.assertExit(result, 0)
        self.assertEqual(sorted(self.pid_files()), [0, 1])

    def test_no_python_and_dash_spelling(self):
        for spelling in ("--no_python", "--no-python"):
            with self.subTest(spelling=spelling):
                result = self.gangrun(["--nproc_per_node", 2, spelling, *self.fake("--print-env", self.path("env.{rank}.json"))])
                self.assertExit(result, 0)
                self.assertEqual(self.read_json(self.path("env.1.json"))["argv"][1:3], ["--pid-dir", self.pid_dir])

    def test_double_dash_ends_options(self):
        result = self.gangrun(["--nproc_per_node", 2, "--", *self.fake("--exit", 0)])
        self.assertExit(result, 0)
        self.assertEqual(sorted(self.pid_files()), [0, 1])

    def test_bash_dash_c(self):
        result = self.gangrun(["--nproc_per_node", 2, "bash", "-c", f'echo "hello $RANK" > {self.out}/ran.$RANK'])
        self.assertExit(result, 0)
        self.assertEqual(self.ran(0), ["hello 0"])
        self.assertEqual(self.ran(1), ["hello 1"])

    def test_py_script_runs_with_python_option(self):
        script = self.path("train.py")
        with open(script, "w") as f:
            f.write(PY_SCRIPT.format(out=self.out))
        result = self.gangrun(["--nproc_per_node", 2, "--python", TEST_PYTHON, script, "a", "b c"])
        self.assertExit(result, 0)
        self.assertEqual(self.ran(1), ["script", script, "a", "b c"])

    def test_non_executable_file_runs_with_python(self):
        script = self.path("train-without-suffix")
        with open(script, "w") as f:
            f.write(PY_SCRIPT.format(out=self.out))
        os.chmod(script, 0o644)
        result = self.gangrun(["--python", TEST_PYTHON, script, "x"])
        self.assertExit(result, 0)
        self.assertEqual(self.ran(0), ["script", script, "x"])

    def test_python3_from_path_by_default(self):
        self.recording_python("python3")
        script = self.path("train.py")
        with open(script, "w") as f:
            f.write("raise SystemExit('never run by the recording python')\n")
        result = self.gangrun([script, "arg"], env=self.env_with_bin_on_path())
        self.assertExit(result, 0)
        self.assertEqual(self.ran(0), ["python3", "-u", script, "arg"])

    def test_python_exec_beats_path_and_python_option_beats_python_exec(self):
        self.recording_python("python3")
        exec_python = self.recording_python("python-exec")
        option_python = self.recording_python("python-option")
        script = self.path("train.py")
        with open(script, "w") as f:
            f.write("raise SystemExit('never run')\n")
        result = self.gangrun([script], env=self.env_with_bin_on_path(PYTHON_EXEC=exec_python))
        self.assertExit(result, 0)
        self.assertEqual(self.ran(0), ["python-exec", "-u", script])
        result = self.gangrun(["--python", option_python, script], env=self.env_with_bin_on_path(PYTHON_EXEC=exec_python))
        self.assertExit(result, 0)
        self.assertEqual(self.ran(0), ["python-option", "-u", script])

    def test_module(self):
        with open(self.path("gangrun_test_module.py"), "w") as f:
            f.write(PY_SCRIPT.format(out=self.out))
        for spelling in ("-m", "--module"):
            with self.subTest(spelling=spelling):
                result = self.gangrun(["--nproc_per_node", 2, "--python", TEST_PYTHON, spelling,
                                       "gangrun_test_module", "arg"],
                                      env=harness.clean_env(PYTHONPATH=self.tmp))
                self.assertExit(result, 0)
                self.assertEqual(self.ran(1), ["script", self.path("gangrun_test_module.py"), "arg"])

    def test_arguments_pass_through_untouched(self):
        odd = ["", "a b", "'quoted'", '"double"', "$HOME", "*", "ünïcode", "--nproc_per_node", "3", "-m", "x;y", "{rank}x"]
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--print-env", self.path("env.{rank}.json"), "--", *odd)])
        self.assertExit(result, 0)
        for rank in (0, 1):
            argv = self.read_json(self.path(f"env.{rank}.json"))["argv"]
            self.assertEqual(argv[-len(odd):], odd, f"rank {rank}" + result.describe())

    def test_local_rank_macro(self):
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--append", self.path("unused"), "tag=${local_rank}", "--print-env", self.path("env.{rank}.json"))])
        self.assertExit(result, 0)
        for rank in (0, 1):
            argv = self.read_json(self.path(f"env.{rank}.json"))["argv"]
            self.assertIn(f"tag={rank}", argv, f"rank {rank}: ${{local_rank}} not replaced in {argv}")


if __name__ == "__main__":
    harness.main()
