"""The Python wheels (pyproject.toml, scripts/build-wheel; docs/install.md): one per
architecture, gangrun-VERSION-py3-none-manylinux_2_28_ARCH.whl, whose gangrun executable needs
nothing but the C library, at glibc 2.28's symbols or older.

The wheels are built once for the whole file with scripts/build-wheel (x86_64 and aarch64, in
wheel/ of the CMake build directory GANGRUN_BIN lives in, kept between runs so that a rerun
builds only what changed), or taken from GANGRUN_WHEEL_DIR when it names a directory that holds
both. The tests read them (auditwheel show, the ELF's needed libraries and symbol versions,
the size), install the x86_64 one into a fresh virtual environment of /usr/bin/python3 (with its
system site-packages, for Debian's torch) with `pip install --no-index`, no compiler involved,
and run from there a 4-rank PyTorch job (gloo), `gangrun devices`, `gangrun completion` and
`python -m gangrun`; pip must refuse the wheel for an older glibc by its tag. The aarch64
binary runs under qemu-aarch64 (Debian's qemu-user) with Debian's arm64 C library: --version,
completions, devices and a 3-worker job. The sdist is built, and `pip install`ed into another
fresh virtual environment, which compiles gangrun with the system's compiler and libraries
(through ccache when it is on PATH); the gangrun it installs runs a 2-rank job and a 4-rank
PyTorch job.
"""

import glob
import gzip
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import unittest
import zipfile

import harness

# GANGRUN_WHEEL_ARCHES=x86_64 builds and tests that wheel only (the aarch64 tests then skip).
ARCHES = tuple(os.environ.get("GANGRUN_WHEEL_ARCHES", "x86_64 aarch64").split())
VENV_WHEEL = os.path.join(harness.REPO, ".venv-wheel")
WHEEL_PYTHON = os.path.join(VENV_WHEEL, "bin", "python")
BUILD_TIMEOUT = 1800  # one architecture from scratch on a loaded 2-core machine; minutes normally
TIMEOUT = 300
MAX_GLIBC = (2, 28)
# What the executable may need: the C library and its parts, and the dynamic loader.
ALLOWED_NEEDED = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|"
                            r"ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$")
QEMU_ROOT = "/usr/aarch64-linux-gnu"  # Debian's libc6-arm64-cross
COMPLETION_FILES = {  # gangrun completion SHELL -> where the wheel installs it under the prefix
    "bash": "share/bash-completion/completions/gangrun",
    "zsh": "share/zsh/site-functions/_gangrun",
    "fish": "share/fish/vendor_completions.d/gangrun.fish",
}
MAN_PAGE = "share/man/man1/gangrun.1.gz"  # gzip -9n, as Debian installs it


def run(argv, timeout=TIMEOUT, env=None, check=True, **kwargs):
    return harness.run_tool(argv, timeout=timeout, env=env, check=check, **kwargs)


def build_dir_of(binary):
    """The CMake build directory that holds BINARY (the nearest with a CMakeCache.txt), or None."""
    here = os.path.dirname(os.path.realpath(binary))
    while not os.path.isfile(os.path.join(here, "CMakeCache.txt")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


class Wheels:
    """Built (or found) once for every test of this file."""
    tmp = None
    version = None
    paths = {}  # arch -> wheel file
    binaries = {}  # arch -> the gangrun executable extracted from the wheel


def wheel_name(arch):
    return f"gangrun-{Wheels.version}-py3-none-manylinux_2_28_{arch}.whl"


def setUpModule():
    Wheels.version = run([harness.GANGRUN, "--version"], timeout=30).stdout.split()[-1]
    Wheels.tmp = tempfile.mkdtemp(prefix="gangrun-wheel-")
    given = os.environ.get("GANGRUN_WHEEL_DIR")
    if given:
        out = given
    else:
        build_dir = build_dir_of(harness.GANGRUN) or Wheels.tmp
        out = os.path.join(Wheels.tmp, "dist")
        for arch in ARCHES:
            result = run([os.path.join(harness.REPO, "scripts", "build-wheel"), "--arch", arch,
                          "--out", out, "--build-root", os.path.join(build_dir, "wheel")],
                         timeout=BUILD_TIMEOUT)
            print(result.stdout.strip(), file=sys.stderr)
    for arch in ARCHES:
        path = os.path.join(out, wheel_name(arch))
        if not os.path.isfile(path):
            raise AssertionError(f"{path} was not built; {out} holds {sorted(os.listdir(out))}")
        Wheels.paths[arch] = path
        with zipfile.ZipFile(path) as wheel:
            member = f"gangrun-{Wheels.version}.data/scripts/gangrun"
            target = os.path.join(Wheels.tmp, arch, "gangrun")
            os.makedirs(os.path.dirname(target))
            with wheel.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(target, 0o755)
            Wheels.binaries[arch] = target
        print(f"{os.path.basename(path)}: {os.path.getsize(path) / 1024:.0f} KiB, its gangrun "
              f"{os.path.getsize(Wheels.binaries[arch]) / 1024:.0f} KiB", file=sys.stderr)


def tearDownModule():
    if Wheels.tmp:
        shutil.rmtree(Wheels.tmp, ignore_errors=True)


def glibc_versions(binary):
    """The GLIBC_x.y versions BINARY's symbols ask for, as tuples."""
    out = run(["readelf", "--version-info", "--wide", binary], timeout=60).stdout
    return {tuple(int(n) for n in v.split(".")) for v in re.findall(r"Name: GLIBC_([0-9.]+)", out)}


def needed(binary):
    out = run(["readelf", "-d", binary], timeout=60).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


class WheelFiles(unittest.TestCase):
    def test_names_tags_and_contents(self):
        for arch, path in Wheels.paths.items():
            with self.subTest(arch=arch), zipfile.ZipFile(path) as wheel:
                names = wheel.namelist()
                info = wheel.read(f"gangrun-{Wheels.version}.dist-info/WHEEL").decode()
                self.assertIn(f"Tag: py3-none-manylinux_2_28_{arch}", info)
                self.assertIn("Root-Is-Purelib: false", info)
                data = f"gangrun-{Wheels.version}.data"
                for name in (f"{data}/scripts/gangrun", f"{data}/data/{MAN_PAGE}", "gangrun/__init__.py",
                             "gangrun/__main__.py", *(f"{data}/data/{p}" for p in COMPLETION_FILES.values())):
                    self.assertIn(name, names)
                mode = wheel.getinfo(f"{data}/scripts/gangrun").external_attr >> 16
                self.assertTrue(mode & stat.S_IXUSR, f"the executable's mode is {oct(mode)}")
                # The executable itself, not a Python script in front of it.
                self.assertEqual(wheel.read(f"{data}/scripts/gangrun")[:4], b"\x7fELF")
                strays = [n for n in names if re.search(r"\.so(\.|$)|\.a$|/include/|unit_tests|fake_", n)]
                self.assertEqual(strays, [], "libraries or test programs in the wheel")

    def test_auditwheel_agrees(self):
        for arch, path in Wheels.paths.items():
            with self.subTest(arch=arch):
                out = run([os.path.join(VENV_WHEEL, "bin", "auditwheel"), "show", path], timeout=120).stdout
                flat = " ".join(out.split())
                # The lowest policy its symbols allow, which may be below the tag it carries.
                match = re.search(rf'consistent with the following platform tag: "manylinux_2_(\d+)_{arch}"', flat)
                self.assertIsNotNone(match, out)
                self.assertLessEqual(int(match.group(1)), MAX_GLIBC[1], out)
                libraries = set(re.findall(r"(\S+\.so\.\d+) with versions", flat))
                self.assertTrue(libraries and all(ALLOWED_NEEDED.match(n) for n in libraries), out)
                self.assertNotIn("external shared libraries", flat, out)

    def test_binary_needs_only_the_c_library_of_glibc_2_28(self):
        for arch, binary in Wheels.binaries.items():
            with self.subTest(arch=arch):
                libraries = needed(binary)
                self.assertTrue(libraries)
                self.assertEqual([n for n in libraries if not ALLOWED_NEEDED.match(n)], [],
                                 f"NEEDED: {libraries}")
                versions = glibc_versions(binary)
                highest = max(versions)
                print(f"{arch}: highest GLIBC_ symbol version {'.'.join(map(str, highest))}, NEEDED "
                      f"{', '.join(libraries)}", file=sys.stderr)
                self.assertLessEqual(highest, MAX_GLIBC)
                symbols = run(["readelf", "--dyn-syms", "--wide", binary], timeout=60).stdout
                self.assertNotRegex(symbols, r"GLIBCXX_|CXXABI_|GCC_[0-9]", "a C++ runtime is linked dynamically")
                sections = run(["readelf", "-S", "--wide", binary], timeout=60).stdout
                self.assertNotIn(".debug_info", sections)
                self.assertNotIn(".symtab", sections, "the wheel's binary is stripped")

    def test_size(self):
        for arch, path in Wheels.paths.items():
            with self.subTest(arch=arch):
                size = os.path.getsize(path)
                print(f"{arch}: wheel {size} bytes", file=sys.stderr)
                self.assertLess(size, 8 * 1024 * 1024, "the wheel grew past 8 MiB")


def venv_env(venv):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run_pytorch_job(test, gangrun, python, env):
    """A 4-rank PyTorch job (gloo) that GANGRUN starts with PYTHON; skips without torch."""
    if run([python, "-c", "import torch.distributed"], check=False, env=env).returncode != 0:
        test.skipTest("Debian's python3-torch is not importable from the environment")
    work = tempfile.mkdtemp(prefix="job-", dir=Wheels.tmp)
    out_dir, pid_dir = os.path.join(work, "out"), os.path.join(work, "pids")
    os.makedirs(out_dir)
    os.makedirs(pid_dir)
    worker = os.path.join(harness.HERE, "torch_ddp_worker.py")
    result = run([gangrun, "--nproc_per_node", "4", "--python", python, worker, out_dir, pid_dir],
                 env=env, timeout=TIMEOUT, cwd=work)
    for rank in range(4):
        with test.subTest(rank=rank):
            path = os.path.join(out_dir, f"result.{rank}.json")
            test.assertTrue(os.path.isfile(path), f"rank {rank} wrote no result:\n{result.stdout[-3000:]}")
            with open(path) as f:
                text = f.read()
            test.assertIn('"world_size": 4', text)
            test.assertIn('"all_reduce": 10.0', text)


class InstalledWheel(unittest.TestCase):
    """The x86_64 wheel in a fresh virtual environment."""
    venv = None

    @classmethod
    def setUpClass(cls):
        if "x86_64" not in Wheels.paths:
            raise unittest.SkipTest("GANGRUN_WHEEL_ARCHES leaves x86_64 out")
        cls.venv = os.path.join(Wheels.tmp, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", cls.venv])
        cls.env = venv_env(cls.venv)
        # Installing copies files: no compiler may run, nor any -dev package be read.
        env = dict(cls.env, CC="/bin/false", CXX="/bin/false", CMAKE="/bin/false")
        run([os.path.join(cls.venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--no-deps",
             "--no-build-isolation", "--only-binary=:all:", Wheels.paths["x86_64"]], env=env)
        cls.gangrun = os.path.join(cls.venv, "bin", "gangrun")

    def test_gangrun_is_on_the_environments_path(self):
        self.assertEqual(shutil.which("gangrun", path=self.env["PATH"]), self.gangrun)
        with open(self.gangrun, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF", "bin/gangrun is the executable, not a wrapper")
        self.assertEqual(run([self.gangrun, "--version"], env=self.env).stdout.strip(),
                         f"gangrun {Wheels.version}")

    def test_python_m_gangrun(self):
        out = run([os.path.join(self.venv, "bin", "python"), "-m", "gangrun", "--version"], env=self.env)
        self.assertEqual(out.stdout.strip(), f"gangrun {Wheels.version}")
        status = run([os.path.join(self.venv, "bin", "python"), "-m", "gangrun", "--no-such-option"],
                     env=self.env, check=False)
        self.assertEqual(status.returncode, 2, "python -m gangrun returns gangrun's own exit code")

    def test_completions_and_manual_page_are_installed(self):
        for shell, relative in COMPLETION_FILES.items():
            with self.subTest(shell=shell):
                printed = run([self.gangrun, "completion", shell], env=self.env).stdout
                with open(os.path.join(self.venv, relative)) as f:
                    self.assertEqual(printed, f.read(), f"`gangrun completion {shell}` and the installed file differ")
        with gzip.open(os.path.join(self.venv, MAN_PAGE), "rt") as f:
            self.assertIn(f'.TH GANGRUN 1 "" "gangrun {Wheels.version}"', f.read())
        if shutil.which("man"):
            env = dict(self.env, MANPAGER="cat", PAGER="cat", MANWIDTH="100", LC_ALL="C.UTF-8")
            page = run(["man", "-l", os.path.join(self.venv, MAN_PAGE)], env=env).stdout
            self.assertIn("gangrun - start and supervise", page)

    def test_devices(self):
        out = run([self.gangrun, "devices"], env=self.env).stdout
        self.assertRegex(out, r"(?m)^CPU: \d+ usable")
        out = run([self.gangrun, "devices", "--json"], env=self.env).stdout
        self.assertIn('"cpu"', out.lower())

    def test_a_4_rank_pytorch_job(self):
        run_pytorch_job(self, self.gangrun, os.path.join(self.venv, "bin", "python"), self.env)

    def test_pip_refuses_the_wheel_for_an_older_glibc(self):
        # manylinux2014 is glibc 2.17 (CentOS 7): pip picks wheels by tag, and refuses this one
        # before anything is installed, instead of a binary that fails at run time.
        target = os.path.join(Wheels.tmp, "older-glibc")
        result = run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "--dry-run",
                      "--no-index", "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                      "--target", target, Wheels.paths["x86_64"]], env=self.env, check=False)
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("is not a supported wheel on this platform", result.stdout + result.stderr)
        self.assertFalse(os.path.exists(os.path.join(target, "bin", "gangrun")))


def qemu():
    """The qemu-aarch64 command line that runs the aarch64 binary, or None with the reason."""
    path = shutil.which("qemu-aarch64")
    if path is None:
        return None, "qemu-aarch64 not found (Debian package qemu-user)"
    if not os.path.isfile(os.path.join(QEMU_ROOT, "lib", "ld-linux-aarch64.so.1")):
        return None, f"no arm64 C library in {QEMU_ROOT} (Debian package libc6-arm64-cross)"
    return [path, "-L", QEMU_ROOT], None


class EmulatedAarch64(unittest.TestCase):
    def setUp(self):
        if "aarch64" not in Wheels.binaries:
            self.skipTest("GANGRUN_WHEEL_ARCHES leaves aarch64 out")
        self.qemu, reason = qemu()
        if self.qemu is None:
            self.skipTest(reason)
        self.binary = Wheels.binaries["aarch64"]
        self.env = dict(os.environ, QEMU_LD_PREFIX=QEMU_ROOT)

    def test_version_help_and_devices(self):
        out = run([*self.qemu, self.binary, "--version"], env=self.env).stdout
        self.assertEqual(out.strip(), f"gangrun {Wheels.version}")
        out = run([*self.qemu, self.binary, "completion", "bash"], env=self.env).stdout
        self.assertIn("--nproc_per_node", out)
        out = run([*self.qemu, self.binary, "devices"], env=self.env).stdout
        self.assertRegex(out, r"(?m)^CPU: \d+ usable .*aarch64$")
        out = run([*self.qemu, self.binary, "--dry-run", "--nproc_per_node", "2", "--no_python", "/bin/true"],
                  env=self.env).stdout
        self.assertIn("RANK=1", out)

    def test_a_multi_process_job(self):
        # The workers here are this machine's own programs; gangrun's shim forks and executes
        # them. (What re-executes /proc/self/exe, the device probes, cannot run under plain
        # qemu-user without binfmt_misc: `gangrun devices` above reports them as failed.)
        job = run([*self.qemu, self.binary, "--nproc_per_node", "3", "--no_python", "/bin/echo", "hello"],
                  env=self.env)
        for rank in range(3):
            self.assertIn(f"[rank{rank}]: hello", job.stdout.splitlines())


class Sdist(unittest.TestCase):
    """The sdist, and what `pip install gangrun-VERSION.tar.gz` does with it on Debian 12."""
    dir = None
    path = None

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(Wheels.tmp, "sdist")
        run([WHEEL_PYTHON, "-m", "build", "--sdist", "--no-isolation", "--outdir", cls.dir, harness.REPO],
            timeout=TIMEOUT)
        sdists = glob.glob(os.path.join(cls.dir, "gangrun-*.tar.gz"))
        if [os.path.basename(p) for p in sdists] != [f"gangrun-{Wheels.version}.tar.gz"]:
            raise AssertionError(f"{cls.dir} holds {sorted(os.listdir(cls.dir))}, not gangrun-{Wheels.version}.tar.gz")
        cls.path = sdists[0]

    def test_the_sdist_holds_the_source_and_nothing_built(self):
        listing = run(["tar", "-tzf", self.path], timeout=60).stdout.splitlines()
        top = f"gangrun-{Wheels.version}/"
        for name in ("pyproject.toml", "CMakeLists.txt", "lib/CMakeLists.txt", "app/main.cpp",
                     "completions/gangrun.bash", "python/gangrun/__main__.py", "LICENSE", "PKG-INFO"):
            self.assertIn(top + name, listing)
        strays = [n for n in listing if re.match(re.escape(top) + r"(\.venv-|build|\.cache/|dist/|\.git/)", n)]
        self.assertEqual(strays, [], "build outputs or environments in the sdist")

    def test_pip_install_builds_it_with_the_systems_libraries_and_it_runs_jobs(self):
        # A fresh environment of Debian's python3 (its torch through the system site-packages).
        # pip would fetch the build backend, scikit-build-core, into an isolated environment;
        # offline it comes from .venv-wheel/ (a .pth file adds its site-packages after the
        # environment's own), and the build runs without isolation and without an index.
        venv = os.path.join(Wheels.tmp, "sdist-venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        python = os.path.join(venv, "bin", "python")
        env = venv_env(venv)
        backend = run([WHEEL_PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
        purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=env).stdout.strip()
        with open(os.path.join(purelib, "gangrun-test-build-backend.pth"), "w") as f:
            f.write(backend + "\n")
        # pip unpacks an sdist into a directory of a random name and builds there; tar unpacks
        # it the same way into one whose path, relative to the build directory, stays the same
        # from run to run, which ccache needs to find the objects of an earlier run.
        run(["tar", "-xzf", self.path, "-C", self.dir], timeout=120)
        source = os.path.join(self.dir, f"gangrun-{Wheels.version}")
        options = ["--config-settings", f"build-dir={os.path.join(self.dir, 'build')}"]
        if shutil.which("ccache", path=env["PATH"]):
            # Paths under the base directory are hashed relative to the build directory.
            options += ["--config-settings", "cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            env["CCACHE_BASEDIR"] = Wheels.tmp
        start = time.monotonic()
        run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation", *options, source],
            env=env, timeout=BUILD_TIMEOUT)
        print(f"pip install of the sdist: {time.monotonic() - start:.0f} s "
              f"({'with' if 'CCACHE_BASEDIR' in env else 'without'} ccache)", file=sys.stderr)

        gangrun = os.path.join(venv, "bin", "gangrun")
        package = run([python, "-c", "import importlib.metadata as m; print(m.version('gangrun'))"], env=env)
        self.assertEqual(package.stdout.strip(), Wheels.version)
        self.assertEqual(run([gangrun, "--version"], env=env).stdout.strip(), f"gangrun {Wheels.version}")
        self.assertEqual(run([python, "-m", "gangrun", "--version"], env=env).stdout.strip(),
                         f"gangrun {Wheels.version}")
        # Debian's shared libraries, not the wheel's static ones.
        libraries = needed(gangrun)
        for library in ("libyaml-cpp", "libsodium"):
            self.assertTrue(any(n.startswith(library) for n in libraries), f"NEEDED: {libraries}")
        self.assertTrue(os.path.isfile(os.path.join(venv, MAN_PAGE)))
        job = run([gangrun, "--nproc_per_node", "2", "--no_python", "/bin/echo", "hello"], env=env)
        for rank in range(2):
            self.assertIn(f"[rank{rank}]: hello", job.stdout.splitlines())
        run_pytorch_job(self, gangrun, python, env)


if __name__ == "__main__":
    if not os.access(WHEEL_PYTHON, os.X_OK):
        harness.skip_script(f"{WHEEL_PYTHON} not found: scripts/install-deps makes .venv-wheel/, the wheel's build tools")
    for tool, package in (("readelf", "binutils"), ("cmake", "cmake"), ("ninja", "ninja-build")):
        if shutil.which(tool) is None:
            harness.skip_script(f"{tool} not found (Debian package {package})")
    harness.main()
