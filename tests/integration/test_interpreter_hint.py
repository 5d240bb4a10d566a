"""The failure report's interpreter hint, run for real: a worker whose Python has no torch
fails on `import torch`; the summary and the --report name the interpreter that ran, where
it came from (--python, PYTHON_EXEC, python3 on PATH, a program's #! line) and the fix. A
script that fails otherwise gets no hint. The interpreter without torch is a virtual
environment made in the test's directory (no system site packages, no pip)."""

import errno
import os
import shlex
import stat
import subprocess
import sys

import harness
import store_wire
from harness import GangrunTestCase

IMPORTS_TORCH = "import torch\nprint('unreachable')\n"
IMPORTS_ACCELERATE = "from accelerate import Accelerator\n"
FAILS_OTHERWISE = "raise ValueError('bad batch')\n"


class InterpreterHint(GangrunTestCase):
    def setUp(self):
        super().setUp()
        self.venv = self.path("venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", self.venv], check=True,
                       stdin=subprocess.DEVNULL, timeout=30)
        self.venv_bin = os.path.join(self.venv, "bin")
        self.python = os.path.join(self.venv_bin, "python")
        probe = subprocess.run([self.python, "-c", "import torch"], env=self.env(),
                               capture_output=True, text=True, timeout=30)
        self.assertIn("No module named 'torch'", probe.stderr,
                      "the test's virtual environment must lack torch")

    def env(self, **extra):
        env = harness.clean_env(**extra)
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONHOME", None)
        return env

    def script(self, name, text, executable=False):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        if executable:
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def run_failing(self, args, env):
        report = self.path(f"report.{len(self._started)}.json")
        result = self.gangrun(["--report", report, *args], env=env)
        self.assertExit(result, 1)
        return result, self.read_json(report)

    def assert_hint(self, result, doc, *, interpreter, module, origin, source):
        self.assertIn(f"  python:     {interpreter} (chosen by {origin})\n", result.stderr,
                      result.describe())
        hint = (f"{module} is not installed for the Python interpreter that ran, {interpreter} "
                f"(chosen by {origin}): install it into that interpreter "
                f"({interpreter} -m pip install {module}), or ")
        self.assertIn(f"  hint:       {hint}", result.stderr, result.describe())
        self.assertEqual(doc["interpreter"],
                         {"path": interpreter, "source": source, "origin": origin})
        root = harness.report_root_cause(doc)
        self.assertTrue(root["hint"].startswith(hint), root["hint"])

    def test_python_option(self):
        script = self.script("train.py", IMPORTS_TORCH)
        result, doc = self.run_failing(["--nproc_per_node", 2, "--python", self.python, script],
                                       self.env())
        self.assertIn("ModuleNotFoundError: No module named 'torch'", result.stderr)
        self.assertIn("choose an interpreter that has it with --python PATH or PYTHON_EXEC",
                      result.stderr)
        self.assert_hint(result, doc, interpreter=self.python, module="torch", source="--python",
                         origin="--python, from the command line, GANGRUN_PYTHON or --config")

    def test_python_exec(self):
        script = self.script("train.py", IMPORTS_TORCH)
        result, doc = self.run_failing(["--output", "prefix", script],
                                       self.env(PYTHON_EXEC=self.python))
        self.assert_hint(result, doc, interpreter=self.python, module="torch",
                         source="PYTHON_EXEC", origin=f"PYTHON_EXEC={self.python}")

    def test_python3_on_path(self):
        env = self.env()
        env["PATH"] = self.venv_bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        script = self.script("train.py", IMPORTS_ACCELERATE)
        result, doc = self.run_failing(["--nproc_per_node", 2, script], env)
        python3 = os.path.join(self.venv_bin, "python3")
        self.assert_hint(result, doc, interpreter=python3, module="accelerate", source="PATH",
                         origin=f"the default, python3, found in {self.venv_bin} on PATH")

    def test_shebang_of_a_program_run_as_it_is(self):
        env = self.env()
        env["PATH"] = self.venv_bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        program = self.script("train", "#!/usr/bin/env python3\n" + IMPORTS_TORCH, executable=True)
        result, doc = self.run_failing(["--output", "prefix", "--no_python", program], env)
        python3 = os.path.join(self.venv_bin, "python3")
        self.assert_hint(result, doc, interpreter=python3, module="torch", source="#!",
                         origin=f"the #! line of {program} (#!/usr/bin/env python3), "
                                f"found in {self.venv_bin} on PATH")
        self.assertIn("or change that #! line", result.stderr)

    def test_other_failures_get_no_hint(self):
        script = self.script("train.py", FAILS_OTHERWISE)
        result, doc = self.run_failing(["--nproc_per_node", 2, "--python", self.python, script],
                                       self.env())
        self.assertIn("ValueError: bad batch", result.stderr)
        self.assertIn(f"  python:     {self.python} (chosen by --python", result.stderr)
        self.assertNotIn("hint:", result.stderr, result.describe())
        self.assertIsNone(harness.report_root_cause(doc)["hint"])

    def test_inherited_output_is_probed(self):
        # One worker writes straight to gangrun's stderr (--output auto): gangrun sees none of
        # its output, so after it exits 1 gangrun asks its interpreter whether it finds the
        # packages the script imports, and gives the same hint.
        script = self.script("train.py", "import os\n" + IMPORTS_TORCH)
        result, doc = self.run_failing(["--python", self.python, script], self.env())
        self.assertIn("ModuleNotFoundError: No module named 'torch'", result.stderr)
        self.assertNotIn("last output:", result.stderr, result.describe())
        self.assert_hint(result, doc, interpreter=self.python, module="torch", source="--python",
                         origin="--python, from the command line, GANGRUN_PYTHON or --config")

    def test_inherited_output_of_another_failure_gets_no_hint(self):
        # A script that imports no launcher package is never probed: its own failure gets no
        # hint in this output mode either.
        script = self.script("train.py", FAILS_OTHERWISE)
        result, doc = self.run_failing(["--python", self.python, script], self.env())
        self.assertNotIn("hint:", result.stderr, result.describe())
        self.assertIsNone(harness.report_root_cause(doc)["hint"])

    def test_store_answers_while_the_probe_runs(self):
        # The probe is a child watched on the agent's loop, which also serves the store (on
        # many nodes, the one every other node talks to): a store client gets its answers while
        # the probe waits. Here the interpreter is a wrapper whose probe waits until the test
        # releases it through a FIFO; the report still has what the probe found.
        started = self.path("probe-started")
        release = self.path("release")
        os.mkfifo(release)
        wrapper = self.script("python", f"""#!/bin/sh
if [ "$1" = -c ]; then
  : > {shlex.quote(started)}
  read line < {shlex.quote(release)}
fi
exec {shlex.quote(self.python)} "$@"
""", executable=True)
        script = self.script("train.py", IMPORTS_TORCH)
        port = harness.free_port()
        report = self.path("report.json")
        proc = self.start(["--report", report, "--master_port", port, "--python", wrapper, script],
                          env=self.env())
        harness.wait_for(lambda: os.path.exists(started) or proc.poll() is not None,
                         harness.EVENT_TIMEOUT, "the interpreter probe to start")
        self.assertIsNone(proc.poll(), self.stderr_of(proc))

        with store_wire.Validated(port) as client:
            client.set("while/probing", "answered")
            self.assertEqual(client.get("while/probing"), b"answered")
            self.assertEqual(client.ping(7), 7)
        self.assertFalse(os.path.exists(report), "the run must still be waiting for its probe")

        def writer():
            try:
                return os.open(release, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno == errno.ENXIO:  # the probe has not opened it yet
                    return None
                raise
        fd = harness.wait_for(writer, harness.EVENT_TIMEOUT, "the probe to wait for its release")
        os.write(fd, b"go\n")
        os.close(fd)
        result = self.finish(proc)
        self.assertExit(result, 1)
        self.assert_hint(result, self.read_json(report), interpreter=wrapper, module="torch",
                         source="--python",
                         origin="--python, from the command line, GANGRUN_PYTHON or --config")


if __name__ == "__main__":
    harness.main()
