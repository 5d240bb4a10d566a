#!/usr/bin/env python3
"""Nothing in the repository sends its reader to a file that is not in the repository.

gangrun was planned with notes that live beside the repository, never in it: a design file, a
style file, and a folder of reference notes on the tools gangrun works with. A comment or a
document that cites one of them points at a file nobody who clones the repository can open; it
has to say the fact itself, or name a file that is here (README.md, lib/ARCHITECTURE.md, ...).

Every file git tracks is read (binary files are skipped), and the test fails, naming FILE:LINE,
on a mention of those notes: the design or style file's name, or a path that starts with the
reference folder or goes through the shared folder beside the repository. A mention passes
only when the path it names is in the repository (from its root or from the citing file's
folder). Every relative Markdown link in a tracked *.md file, inline `[text](path)` or a
`[label]: path` definition, must name a file or folder of the repository too: links with a
scheme (https:, mailto:) and pure #anchors are not checked, and an #anchor after a path is
dropped before the path is looked up.

It reads files only: no build, no gangrun binary, well under a second.
"""
import os
import posixpath
import re
import subprocess
import sys
import unittest
from urllib.parse import unquote

import harness

REPO = harness.REPO

# The notes' names are put together here, so that this file does not cite them itself.
OUTSIDE_FILE_NAMES = ("DESIGN" + ".md", "STYLE" + ".md")
REFERENCE_FOLDER = "reference" + "/"
SHARED_FOLDER = "shared" + "/"

# A path-like run of characters; what it names is then classified in outside_file().
PATH_TOKEN = re.compile(r"[\w.~+/-]+")
# The target of an inline link or image: "](target)", "](<target>)", "](target "title")".
INLINE_LINK = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
# A link reference definition: "[label]: target" at the start of a line.
LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
CODE_SPAN = re.compile(r"(`+).*?\1")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class Repository:
    """The paths git tracks, and every folder that holds one of them."""

    def __init__(self, files):
        self.files = set(files)
        self.folders = set()
        for path in self.files:
            folder = posixpath.dirname(path)
            while folder and folder not in self.folders:
                self.folders.add(folder)
                folder = posixpath.dirname(folder)

    def holds(self, path):
        """Whether PATH (relative to the repository's root) is a tracked file or a folder of one."""
        path = posixpath.normpath(path)
        if path in (".", ""):
            return True
        if path.startswith("../") or path == ".." or path.startswith("/"):
            return False
        return path in self.files or path in self.folders

    def resolves(self, target, citing_file):
        """Whether TARGET names something in the repository, read from the repository's root
        or from the folder of CITING_FILE."""
        if target.startswith("/"):
            return False
        here = posixpath.dirname(citing_file)
        return self.holds(target) or self.holds(posixpath.join(here, target))


def outside_file(token):
    """Whether the path-like TOKEN names one of the notes kept outside the repository."""
    path = token.rstrip(".,:;")
    while path.startswith("./"):
        path = path[2:]
    return (posixpath.basename(path) in OUTSIDE_FILE_NAMES
            or path.startswith(REFERENCE_FOLDER)
            or SHARED_FOLDER + "reference" in path
            or "../" + SHARED_FOLDER in path), path


def outside_mentions(citing_file, text, repository):
    """(line number, path) for each mention in TEXT of a file outside the repository."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATH_TOKEN.finditer(line):
            outside, path = outside_file(match.group(0))
            if outside and not repository.resolves(path, citing_file):
                found.append((number, path))
    return found


def link_targets(text):
    """(line number, target) for every link target in the Markdown TEXT, outside code."""
    in_fence = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if in_fence is None:
                in_fence = fence.group(1)
            elif fence.group(1) == in_fence:
                in_fence = None
            continue
        if in_fence is not None:
            continue
        line = CODE_SPAN.sub("", line)
        definition = LINK_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)


def broken_links(markdown_file, text, repository):
    """(line number, target) for each relative link in MARKDOWN_FILE that names nothing in the
    repository."""
    found = []
    for number, target in link_targets(text):
        target = target.strip("<>")
        if not target or target.startswith("#") or SCHEME.match(target):
            continue
        path = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if not path:
            continue
        # A link that starts with "/" is read from the repository's root, as GitHub reads it.
        resolved = path.lstrip("/") if path.startswith("/") else posixpath.join(
            posixpath.dirname(markdown_file), path)
        if not repository.holds(resolved):
            found.append((number, target))
    return found


def tracked_files():
    """The files git tracks in REPO, as paths relative to it; None when git cannot list them
    (no git, or a source tree that is not a checkout)."""
    try:
        listing = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], capture_output=True,
                                 check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [path for path in listing.decode("utf-8", "surrogateescape").split("\0") if path]


def read_text(path):
    """The text of the tracked file PATH, or None for a binary file or one that is not a
    regular file in the working tree (a symbolic link, a submodule, a file deleted there)."""
    full = os.path.join(REPO, path)
    if os.path.islink(full) or not os.path.isfile(full):
        return None
    with open(full, "rb") as file:
        data = file.read()
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


class RepositoryReferences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        files = tracked_files()
        cls.repository = Repository(files)
        cls.texts = {}
        for path in files:
            text = read_text(path)
            if text is not None:
                cls.texts[path] = text

    def test_the_listing_holds_the_repository(self):
        for path in ("README.md", "lib/ARCHITECTURE.md", "tests/integration/harness.py"):
            self.assertIn(path, self.texts, "git ls-files did not list the repository's files")

    def test_no_file_cites_a_file_outside_the_repository(self):
        problems = [f"{path}:{number}: cites {cited}, which is not in the repository"
                    for path, text in sorted(self.texts.items())
                    for number, cited in outside_mentions(path, text, self.repository)]
        if problems:
            self.fail(f"{len(problems)} found:\n" + "\n".join(problems))

    def test_every_relative_markdown_link_names_a_file_of_the_repository(self):
        problems = [f"{path}:{number}: links to {target}, which is not in the repository"
                    for path, text in sorted(self.texts.items()) if path.endswith(".md")
                    for number, target in broken_links(path, text, self.repository)]
        if problems:
            self.fail(f"{len(problems)} found:\n" + "\n".join(problems))

    def test_the_checks_catch_what_they_look_for(self):
        # The same checks on made-up files, so that a check that found nothing above is one
        # that looked.
        repository = Repository(["README.md", "lib/ARCHITECTURE.md", "lib/store/PROTOCOL.md",
                                 "docs/securing-multi-node.md"])
        design, style = OUTSIDE_FILE_NAMES
        beside = f"/work/{SHARED_FOLDER}{REFERENCE_FOLDER}x.md"
        cited = {
            f"// the rule ({design} section 9)": design,
            f"# see {style} point 2.": style,
            f"// as in {REFERENCE_FOLDER}devices.md §5": REFERENCE_FOLDER + "devices.md",
            f"see ../{SHARED_FOLDER}notes.txt": "../" + SHARED_FOLDER + "notes.txt",
            f"read {beside}.": beside,
        }
        for line, path in cited.items():
            with self.subTest(line=line):
                self.assertEqual(outside_mentions("lib/a.hpp", f"first\n{line}\n", repository),
                                 [(2, path)])
        for line in ("// see lib/ARCHITECTURE.md, \"Modules\"", "README.md's \"Exit codes\"",
                     f"std::shared_ptr<int> p{REFERENCE_FOLDER}x"):
            with self.subTest(line=line):
                self.assertEqual(outside_mentions("lib/a.hpp", line, repository), [])
        # A name of those notes is fine once the repository holds that file.
        self.assertEqual(outside_mentions("a.txt", design, Repository([design])), [])

        markdown = "\n".join([
            "[map](ARCHITECTURE.md) [wire](store/PROTOCOL.md#framing) [web](https://x.org/a)",
            "[here](#layout) [up](../README.md) [root](/docs/securing-multi-node.md)",
            "[gone](docs/missing.md#part) [out](../../elsewhere.md)",
            "`[code](not/checked.md)`",
            "```",
            "[fenced](not/checked.md)",
            "```",
            "[label]: lib/nothing.md",
        ])
        self.assertEqual(broken_links("lib/NOTES.md", markdown, repository),
                         [(3, "docs/missing.md#part"), (3, "../../elsewhere.md"),
                          (8, "lib/nothing.md")])
        self.assertEqual(broken_links("README.md", "[map](lib/ARCHITECTURE.md)", repository), [])


def main():
    if tracked_files() is None:
        print(f"SKIP: git cannot list the files of {REPO}: not a checkout", file=sys.stderr)
        sys.exit(harness.SKIP)
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
