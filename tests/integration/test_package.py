"""The Debian package (CMakeLists.txt's install rules; docs/building.md, "Installing"): `cpack -G DEB`
in the build directory GANGRUN_BIN lives in gives one gangrun_<version>_<arch>.deb that holds the
binary, the manual page generated from the option table, the shell completions and the documents,
and nothing of the tests; its Depends name the package of every library the binary links.

Without installing anything, the tests read the package with dpkg-deb and format its manual
page with man. Run as root with a usable dpkg, InstalledPackage also installs it system-wide
(`dpkg -i`), uses what it installed (gangrun --version, man gangrun, bash completion through
bash-completion's loader), removes it (`dpkg -r`) and checks that every file it installed is
gone. It fails, rather than replace anything, when gangrun is already installed or one of its
files already exists. The package is built once, into a private directory removed at the end.
"""

import glob
import gzip
import os
import re
import shutil
import sys
import tempfile
import unittest

import harness

PACKAGE = "gangrun"
BIN_PATH = "/usr/bin/gangrun"
MAN_PATH = "/usr/share/man/man1/gangrun.1.gz"
DOC_DIR = "/usr/share/doc/gangrun"
COMPLETIONS = {  # installed path -> the source file it comes from (completions/ in the tree)
    "/usr/share/bash-completion/completions/gangrun": "gangrun.bash",
    "/usr/share/zsh/vendor-completions/_gangrun": "_gangrun",
    "/usr/share/fish/vendor_completions.d/gangrun.fish": "gangrun.fish",
}
EXPECTED_FILES = [BIN_PATH, MAN_PATH, f"{DOC_DIR}/copyright", f"{DOC_DIR}/changelog.gz",
                  f"{DOC_DIR}/README.md.gz", f"{DOC_DIR}/docs/flags.md.gz",
                  f"{DOC_DIR}/docs/multi-node.md.gz"]
# Build outputs that must never ship: test programs and the fake driver libraries.
TEST_ONLY = re.compile(r"unit_tests|fake_worker|fake_cuda|fake_ze|libcuda|libze_loader|gen_man|"
                       r"codec_fuzz|spawn_floor|store_load|\.so(\.|$)|\.a$|/include/")

TIMEOUT = 240  # cpack, dpkg -i and dpkg -r with their man-db trigger; each is seconds normally


def run(argv, timeout=TIMEOUT, env=None, check=True, **kwargs):
    return harness.run_tool(argv, timeout=timeout, env=env, check=check, **kwargs)


skip_all = harness.skip_script


def build_dir_of(binary):
    """The CMake build directory that holds BINARY: the nearest directory above it with a
    CMakeCache.txt and a CPackConfig.cmake."""
    here = os.path.dirname(os.path.realpath(binary))
    while True:
        if all(os.path.isfile(os.path.join(here, f)) for f in ("CMakeCache.txt", "CPackConfig.cmake")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def cache_value(build_dir, name):
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(rf"{re.escape(name)}:[A-Z]+=(.*)$", line.rstrip("\n"))
            if m:
                return m.group(1)
    return ""


def package_of_library(path):
    """The Debian package that holds the library file PATH (as ldd resolved it), or None. With
    merged /usr the package database may record /lib/... or /usr/lib/..., so both are tried,
    for the path and for the file it links to."""
    candidates = []
    for p in (path, os.path.realpath(path)):
        candidates.append(p)
        candidates.append(p[4:] if p.startswith("/usr/") else "/usr" + p)
    for candidate in candidates:
        result = run(["dpkg-query", "-S", candidate], timeout=60, check=False)
        if result.returncode == 0 and result.stdout.strip():
            return result.stdout.split(":", 1)[0].strip()
    return None


def names_of(package):
    """PACKAGE and the virtual packages it Provides: a Depends entry on any of them is met by
    it (libspdlog1.10 provides libspdlog1.10-fmt9, the name its shlibs file tells dpkg-shlibdeps)."""
    provides = run(["dpkg-query", "-W", "-f=${Provides}", package], timeout=60, check=False).stdout
    return {package} | depends_packages(provides)


def linked_libraries(binary):
    """{soname: resolved path} of the libraries BINARY needs directly (its DT_NEEDED)."""
    dynamic = run(["readelf", "-d", binary], timeout=60).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", binary], timeout=60).stdout, re.M))
    return {soname: resolved.get(soname) for soname in needed}


def depends_packages(depends):
    """Package names in a Depends field: "libc6 (>= 2.34), libfmt9 (>= 9.1.0)" -> {libc6, libfmt9}."""
    names = set()
    for clause in depends.split(","):
        for alternative in clause.split("|"):
            name = alternative.strip().split(" ")[0].split(":")[0]
            if name:
                names.add(name)
    return names


class Package:
    """The .deb built once for every test of this file."""
    tmp = None
    deb = None
    build_dir = None
    version = None


def require_tools():
    """Exit 77 (skip) with a reason when the package cannot be built or read here."""
    for tool, package in (("cpack", "cmake"), ("dpkg-deb", "dpkg"), ("dpkg-shlibdeps", "dpkg-dev"),
                          ("readelf", "binutils"), ("ldd", "libc-bin")):
        if shutil.which(tool) is None:
            skip_all(f"{tool} not found (Debian package {package}); it is needed to build and read the .deb")
    if not (os.path.isfile(harness.GANGRUN) and os.access(harness.GANGRUN, os.X_OK)):
        skip_all(f"GANGRUN_BIN is not an executable file: {harness.GANGRUN}")


def setUpModule():
    Package.build_dir = build_dir_of(harness.GANGRUN)
    if Package.build_dir is None:
        raise AssertionError(f"no CMake build directory (CMakeCache.txt and CPackConfig.cmake) above "
                             f"GANGRUN_BIN={harness.GANGRUN}")
    version = run([harness.GANGRUN, "--version"], timeout=30).stdout.split()
    Package.version = version[-1]

    Package.tmp = tempfile.mkdtemp(prefix="gangrun-pkg-")
    cmake = cache_value(Package.build_dir, "CMAKE_COMMAND")
    cpack = os.path.join(os.path.dirname(cmake), "cpack") if cmake else "cpack"
    config = cache_value(Package.build_dir, "CMAKE_BUILD_TYPE") or "Release"
    run([cpack if os.access(cpack, os.X_OK) else "cpack", "-G", "DEB", "-C", config,
         "--config", os.path.join(Package.build_dir, "CPackConfig.cmake"), "-B", Package.tmp],
        cwd=Package.tmp)
    debs = glob.glob(os.path.join(Package.tmp, "*.deb"))
    if len(debs) != 1:
        raise AssertionError(f"cpack should make one .deb in {Package.tmp}, made {debs}")
    Package.deb = debs[0]


def tearDownModule():
    if Package.tmp:
        shutil.rmtree(Package.tmp, ignore_errors=True)


def package_paths():
    """{path: (mode string, owner)} of every entry of the .deb, paths absolute and without a
    trailing slash."""
    entries = {}
    for line in run(["dpkg-deb", "-c", Package.deb], timeout=60).stdout.splitlines():
        fields = line.split(None, 5)
        path = fields[5].split(" -> ")[0]
        entries[path.lstrip(".").rstrip("/") or "/"] = (fields[0], fields[1])
    return entries


def field(name):
    return run(["dpkg-deb", "-f", Package.deb, name], timeout=60).stdout.strip()


def missing_completion_sources():
    source = os.path.join(harness.REPO, "completions")
    return [name for name in COMPLETIONS.values() if not os.path.isfile(os.path.join(source, name))]


def completion_message():
    missing = missing_completion_sources()
    if missing:
        return (f"the completion scripts {missing} are not in {harness.REPO}/completions yet "
                "(`gangrun completion` work), so the package lacks them")
    return "the completions exist in the source tree but are not in the package"


class PackageContents(unittest.TestCase):
    def test_file_name_and_control_fields(self):
        arch = run(["dpkg", "--print-architecture"], timeout=30).stdout.strip()
        self.assertEqual(os.path.basename(Package.deb), f"{PACKAGE}_{Package.version}_{arch}.deb")
        info = run(["dpkg-deb", "-I", Package.deb], timeout=60).stdout
        self.assertEqual(field("Package"), PACKAGE, info)
        self.assertEqual(field("Version"), Package.version, info)
        self.assertEqual(field("Architecture"), arch, info)
        self.assertEqual(field("Section"), "utils", info)
        self.assertRegex(field("Maintainer"), r"^[^<>]+ <[^<>@\s]+@[^<>\s]+>$", info)
        summary, *extended = field("Description").splitlines()
        self.assertTrue(summary.strip() and len(summary) <= 80, f"synopsis {summary!r}")
        self.assertNotRegex(summary, r"^(?i:a|an|the) ", "a synopsis starts without an article")
        self.assertTrue(extended and "torchrun" in " ".join(extended), f"extended description:\n{info}")
        for line in extended:
            self.assertTrue(line.startswith(" ") and len(line) <= 80 and ";" not in line,
                            f"extended description line {line!r} (a space, then at most 79 "
                            "columns of text; ';' is a CMake list that leaked in)")

    def test_depends_names_every_linked_library(self):
        # Every library in the binary's DT_NEEDED (today spdlog, fmt, libstdc++, libgcc, libc;
        # Boost only if a compiled Boost library gets used: Asio and Process are header-only).
        depends = field("Depends")
        packages = depends_packages(depends)
        self.assertIn("libc6", packages, f"Depends: {depends}")
        linked = linked_libraries(harness.GANGRUN)
        self.assertTrue(linked, "readelf found no NEEDED entries")
        for soname, path in linked.items():
            with self.subTest(library=soname):
                self.assertIsNotNone(path, f"ldd did not resolve {soname}")
                owner = package_of_library(path)
                self.assertIsNotNone(owner, f"no Debian package holds {path}")
                self.assertTrue(names_of(owner) & packages,
                                f"{soname} ({path}, package {owner}, known as {sorted(names_of(owner))}) "
                                f"is linked but Depends is: {depends}")


    def test_holds_what_ships_and_nothing_of_the_tests(self):
        entries = package_paths()
        for path in EXPECTED_FILES:
            self.assertIn(path, entries, "not in the package; it holds:\n" + "\n".join(sorted(entries)))
        self.assertEqual(entries[BIN_PATH][0], "-rwxr-xr-x")
        for path, (mode, owner) in entries.items():
            if path == "/":
                continue
            with self.subTest(path=path):
                self.assertTrue(path == "/usr" or path.startswith("/usr/"), "everything lives under /usr")
                self.assertEqual(owner, "root/root")
                self.assertNotRegex(path, TEST_ONLY, "a test-only build output is in the package")
                self.assertIn(mode, ("drwxr-xr-x", "-rwxr-xr-x" if path == BIN_PATH else "-rw-r--r--"))
        for path in COMPLETIONS:
            with self.subTest(completion=path):
                self.assertIn(path, entries, completion_message())

    def test_lintian_is_content(self):
        findings = lintian_findings()
        if findings is None:
            self.skipTest("lintian not installed (Debian package lintian)")
        self.assertEqual(findings, [], "lintian --pedantic finds errors or warnings")

    def test_binary_is_stripped_and_runs(self):
        root = os.path.join(Package.tmp, "extracted")
        run(["dpkg-deb", "-x", Package.deb, root], timeout=60)
        binary = root + BIN_PATH
        sections = run(["readelf", "-S", binary], timeout=60).stdout
        for section in (".symtab", ".debug_info"):
            self.assertNotIn(section, sections, "Debian ships stripped binaries")
        self.assertEqual(run([binary, "--version"], timeout=30).stdout.strip(), f"gangrun {Package.version}")

    def test_manual_page_formats_cleanly(self):
        root = os.path.join(Package.tmp, "extracted-man")
        run(["dpkg-deb", "-x", Package.deb, root], timeout=60)
        page = root + MAN_PATH
        with gzip.open(page, "rt") as f:
            source = f.read()
        self.assertIn(f'.TH GANGRUN 1 "" "gangrun {Package.version}"', source)
        with open(page, "rb") as f:
            header = f.read(10)
        self.assertEqual(header[4:8], b"\0\0\0\0", "gzip -n: no time stamp in the compressed page")
        if shutil.which("man") is None:
            self.skipTest("man not found (Debian package man-db): the page was not formatted")
        env = dict(os.environ, MANPAGER="cat", MANWIDTH="100", LC_ALL="C.UTF-8")
        formatted = run(["man", "--warnings", "-l", page], timeout=60, env=env)
        self.assertEqual(formatted.stderr.strip(), "", "groff warns about the page")
        for text in ("GANGRUN(1)", "gangrun - start and supervise", "--nproc_per_node",
                     "--nproc-per-node", "--num_accelerators", "EXIT STATUS", "srun(1)"):
            self.assertIn(text, formatted.stdout)
        self.assertNotIn("\u2212", formatted.stdout, "options should render with ASCII hyphens")
        if shutil.which("lexgrog"):
            whatis = run(["lexgrog", page], timeout=60)
            self.assertIn("gangrun - start and supervise", whatis.stdout)


def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def lintian_findings():
    """lintian's errors and warnings about the package, or None when lintian is not installed.
    The placeholder maintainer address (the default of the CMake cache variable
    GANGRUN_PACKAGE_MAINTAINER, set for a real release) is let through."""
    if shutil.which("lintian") is None:
        return None
    output = run(["lintian", "--pedantic", Package.deb], check=False).stdout
    return [line for line in output.splitlines()
            if line[:2] in ("E:", "W:") and not re.search(r"bogus-mail-host.* \S+@localhost", line)]


def dpkg_status():
    """gangrun's dpkg status ("installed", "config-files", ...), or "" when dpkg has no record."""
    result = run(["dpkg-query", "-W", "-f=${db:Status-Status}", PACKAGE], timeout=60, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def dpkg_usable():
    """Why dpkg cannot install packages here, or None when it can."""
    if os.geteuid() != 0:
        return "not running as root"
    if shutil.which("dpkg") is None:
        return "dpkg not found"
    if not os.access("/var/lib/dpkg", os.W_OK):
        return "/var/lib/dpkg is not writable"
    return None


BASH_COMPLETE = r'''
source /usr/share/bash-completion/bash_completion || exit 3
_completion_loader gangrun
spec=$(complete -p gangrun 2>/dev/null) || { echo "no completion for gangrun after loading" >&2; exit 4; }
[[ $spec =~ -F\ ([^ ]+) ]] || { echo "not a -F completion: $spec" >&2; exit 5; }
COMP_WORDS=(gangrun --npr)
COMP_CWORD=1
COMP_LINE="gangrun --npr"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"${BASH_REMATCH[1]}" gangrun --npr gangrun
printf '%s\n' "${COMPREPLY[@]}"
'''


@unittest.skipIf(dpkg_usable() is not None, f"installing needs root and a usable dpkg: {dpkg_usable()}")
class InstalledPackage(unittest.TestCase):
    def setUp(self):
        status = dpkg_status()
        if status not in ("", "not-installed"):
            self.fail(f"package {PACKAGE} is already on this system (dpkg status {status!r}); this "
                      f"test will not replace it. Remove it (dpkg -r {PACKAGE}) and run again.")
        present = [p for p, (mode, _) in package_paths().items()
                   if not mode.startswith("d") and os.path.lexists(p)]
        if present:
            self.fail(f"files of the package already exist and dpkg -i would overwrite them: {present}")
        self.env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        self.home = tempfile.mkdtemp(prefix="gangrun-pkg-home-")
        self.addCleanup(shutil.rmtree, self.home, True)

    def test_install_use_remove(self):
        run(["dpkg", "-i", Package.deb], env=self.env)
        try:
            installed = run(["dpkg-query", "-L", PACKAGE], timeout=60).stdout.split("\n")
            installed = [p for p in installed if p and p != "/."]
            for path in EXPECTED_FILES:
                self.assertIn(path, installed)
            with self.subTest(check="gangrun --version"):
                self.check_version()
            with self.subTest(check="man gangrun"):
                self.check_manual()
            with self.subTest(check="bash completion"):
                self.check_bash_completion()
        finally:
            if dpkg_status() == "installed":
                run(["dpkg", "-r", PACKAGE], env=self.env)
        self.check_removed(installed)

    def check_version(self):
        installed = run([BIN_PATH, "--version"], timeout=30).stdout.strip()
        built = run([harness.GANGRUN, "--version"], timeout=30).stdout.strip()
        self.assertEqual(installed, built)

    def check_manual(self):
        if shutil.which("man") is None:
            self.skipTest("man not found (Debian package man-db)")
        excluded = [f for f in glob.glob("/etc/dpkg/dpkg.cfg.d/*")
                    if re.search(r"^path-exclude=?\s*/usr/share/man", read_text(f), re.M)]
        if excluded:
            self.skipTest(f"dpkg is told not to install manual pages ({excluded})")
        env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100", LC_ALL="C.UTF-8",
                   HOME=self.home)
        env.pop("MANPATH", None)
        self.assertEqual(run(["man", "-w", "gangrun"], timeout=60, env=env).stdout.strip(), MAN_PATH)
        head = "\n".join(run(["man", "gangrun"], timeout=60, env=env).stdout.splitlines()[:15])
        self.assertIn("GANGRUN(1)", head)
        self.assertIn("gangrun - start and supervise", head)
        self.assertIn("SYNOPSIS", head)

    def check_bash_completion(self):
        path = next(p for p, source in COMPLETIONS.items() if source == "gangrun.bash")
        if not os.path.isfile(path):
            self.fail(f"{path} was not installed: {completion_message()}")
        env = {k: v for k, v in os.environ.items()
               if k not in ("BASH_COMPLETION_USER_DIR", "XDG_DATA_HOME", "XDG_DATA_DIRS", "BASH_ENV")}
        env["HOME"] = self.home
        result = run(["bash", "--norc", "--noprofile", "-c", BASH_COMPLETE], timeout=60, env=env,
                     check=False)
        replies = [line.strip() for line in result.stdout.splitlines()]
        self.assertEqual(result.returncode, 0, f"bash exited {result.returncode}: {result.stderr}")
        self.assertIn("--nproc_per_node", replies, f"COMPREPLY for 'gangrun --npr': {replies}\n{result.stderr}")

    def check_removed(self, installed):
        self.assertIn(dpkg_status(), ("", "not-installed"), f"{PACKAGE} is still known to dpkg")
        left = []
        for path in installed:
            if not os.path.lexists(path):
                continue
            if not os.path.isdir(path) or os.path.islink(path):
                left.append(path)
            elif not os.listdir(path):
                # An empty directory may stay only when another package owns it too.
                owners = run(["dpkg-query", "-S", path], timeout=60, check=False).stdout
                if not owners.strip():
                    left.append(path + "/")
        self.assertEqual(left, [], "dpkg -r left these behind")
        self.assertFalse(os.path.lexists(DOC_DIR))


if __name__ == "__main__":
    require_tools()
    unittest.main(verbosity=2)
