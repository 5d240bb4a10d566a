"""The release workflow (.github/workflows/release.yml; CONTRIBUTING.md, "Making a release").

actionlint (.venv-wheel/bin/actionlint, which scripts/install-deps installs; shellcheck checks
the shell of every `run:` step when it is on PATH) must find nothing in any file under
.github/workflows. The release workflow must build with the repository's own scripts and publish
only from a tag, through PyPI's trusted publishing; its version step, run here with bash as
GitHub runs it, must refuse a tag that is not v + the version in CMakeLists.txt and a release
whose CHANGELOG.md has no "## X.Y.Z - YYYY-MM-DD" section.
"""

import glob
import os
import re
import shutil
import sys
import tempfile
import unittest

import harness

WORKFLOWS = os.path.join(harness.REPO, ".github", "workflows")
RELEASE = os.path.join(WORKFLOWS, "release.yml")
ACTIONLINT = os.path.join(harness.REPO, ".venv-wheel", "bin", "actionlint")
PUBLISH_ACTION = "pypa/gh-action-pypi-publish@release/v1"
TIMEOUT = 120

try:
    import yaml
except ImportError:  # Debian's python3-yaml
    yaml = None


def actionlint():
    """The actionlint command, or None."""
    return ACTIONLINT if os.access(ACTIONLINT, os.X_OK) else shutil.which("actionlint")


class Actionlint(unittest.TestCase):
    def test_no_finding_in_any_workflow(self):
        tool = actionlint()
        if tool is None:
            self.skipTest(f"actionlint not found ({ACTIONLINT}: scripts/install-deps installs it)")
        files = sorted(glob.glob(os.path.join(WORKFLOWS, "*.yml")) + glob.glob(os.path.join(WORKFLOWS, "*.yaml")))
        self.assertIn(RELEASE, files)
        shellcheck = shutil.which("shellcheck")
        if shellcheck is None:
            print("shellcheck not found (Debian package shellcheck): the run: steps' shell is not checked",
                  file=sys.stderr)
        # -shellcheck= with no value turns the check off; pyflakes checks Python steps (none here).
        result = harness.run_tool([tool, "-no-color", f"-shellcheck={shellcheck or ''}", "-pyflakes=", *files],
                                  timeout=TIMEOUT, check=False, cwd=harness.REPO)
        self.assertEqual(result.returncode, 0, f"actionlint:\n{result.stdout}{result.stderr}")
        self.assertEqual(result.stdout.strip(), "")


def release_workflow(test):
    if yaml is None:
        test.skipTest("PyYAML not importable (Debian package python3-yaml)")
    with open(RELEASE) as f:
        return yaml.safe_load(f)


def runs(job):
    return "\n".join(step.get("run", "") for step in job["steps"])


class ReleaseWorkflow(unittest.TestCase):
    def setUp(self):
        self.workflow = release_workflow(self)
        self.jobs = self.workflow["jobs"]

    def test_a_version_tag_triggers_it_and_a_pull_request_publishes_nothing(self):
        # PyYAML reads the key `on` as the boolean True (YAML 1.1).
        triggers = self.workflow.get("on", self.workflow.get(True))
        self.assertEqual(triggers["push"], {"tags": ["v*"]})
        self.assertIn("pull_request", triggers)
        condition = self.jobs["publish"]["if"]
        self.assertIn("github.event_name == 'push'", condition)
        self.assertIn("github.ref_type == 'tag'", condition)

    def test_the_build_uses_the_repositorys_scripts_on_debian_12(self):
        build = self.jobs["build"]
        self.assertEqual(build["container"], "debian:12")
        script = runs(build)
        for command in ("scripts/install-deps --wheel", ".venv-wheel/bin/python -m build --sdist",
                        "scripts/build-wheel --arch x86_64 --arch aarch64"):
            self.assertIn(command, script)
        uploads = [s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
        self.assertEqual(len(uploads), 1)
        self.assertEqual(uploads[0]["with"]["if-no-files-found"], "error")

    def test_publishing_is_trusted_publishing_from_its_own_job(self):
        publish = self.jobs["publish"]
        self.assertEqual(publish["needs"], "build")
        self.assertEqual(publish["permissions"], {"id-token": "write"})
        self.assertEqual(publish["environment"]["name"], "pypi")
        self.assertEqual([s["uses"] for s in publish["steps"]][-1], PUBLISH_ACTION)
        self.assertNotIn("with", publish["steps"][-1], "no token or repository: trusted publishing")
        # Only the publish job may ask for an OIDC token.
        self.assertEqual(self.workflow["permissions"], {"contents": "read"})
        self.assertNotIn("permissions", self.jobs["build"])


class VersionStep(unittest.TestCase):
    """The build job's version step, run with bash in a copy of the files it reads."""

    def setUp(self):
        workflow = release_workflow(self)
        steps = [s for s in workflow["jobs"]["build"]["steps"] if s.get("id") == "version"]
        self.assertEqual(len(steps), 1)
        self.script = steps[0]["run"]
        self.work = tempfile.mkdtemp(prefix="gangrun-release-")
        self.addCleanup(shutil.rmtree, self.work, ignore_errors=True)
        with open(os.path.join(harness.REPO, "CMakeLists.txt")) as f:
            self.cmakelists = f.read()
        self.version = re.search(r"^project\(gangrun VERSION ([0-9.]+)", self.cmakelists, re.M).group(1)

    def run_step(self, ref_type, tag, changelog):
        for name, text in (("CMakeLists.txt", self.cmakelists), ("CHANGELOG.md", changelog)):
            with open(os.path.join(self.work, name), "w") as f:
                f.write(text)
        output = os.path.join(self.work, "github-output")
        open(output, "w").close()
        env = dict(os.environ, REF_TYPE=ref_type, TAG=tag, GITHUB_OUTPUT=output)
        result = harness.run_tool(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", self.script],
                                  timeout=TIMEOUT, env=env, check=False, cwd=self.work)
        with open(output) as f:
            return result, f.read()

    def test_the_version_is_gangruns(self):
        out = harness.run_tool([harness.GANGRUN, "--version"], timeout=30).stdout
        self.assertEqual(out.strip(), f"gangrun {self.version}")

    def test_a_tag_of_this_version_with_its_changelog_section_passes(self):
        changelog = f"# Changelog\n\n## {self.version} - 2026-01-02\n\n- a change\n\n## 0.0.9 - 2025-12-01\n"
        result, output = self.run_step("tag", f"v{self.version}", changelog)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(output, f"version={self.version}\n")

    def test_a_tag_of_another_version_fails(self):
        changelog = f"## {self.version} - 2026-01-02\n"
        result, output = self.run_step("tag", f"v{self.version}.1", changelog)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"the tag is v{self.version}.1, but CMakeLists.txt says version {self.version}", result.stdout)
        self.assertEqual(output, "")

    def test_a_release_without_its_changelog_section_fails(self):
        for changelog in ("# Changelog\n\n## Unreleased\n\n- a change\n",
                          f"## {self.version}\n",  # no date
                          f"## {self.version}0 - 2026-01-02\n",  # another version
                          f"### {self.version} - 2026-01-02\n"):
            with self.subTest(changelog=changelog):
                result, output = self.run_step("tag", f"v{self.version}", changelog)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn(f"no section '## {self.version} - YYYY-MM-DD'", result.stdout)
                self.assertEqual(output, "")

    def test_a_pull_request_needs_no_tag_nor_section(self):
        result, output = self.run_step("branch", "37/merge", "# Changelog\n\n## Unreleased\n")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(output, f"version={self.version}\n")


if __name__ == "__main__":
    harness.main()
