#!/usr/bin/env python3
"""The pages written for users (README.md and docs/*.md, but not docs/building.md, which is for
contributors) speak of gangrun, not of how it is built or tested.

- No page names a test or an internal source file: a path under tests/ or lib/, a test script
  (test_*.py), a C or C++ source or header, a CMake module under cmake/, or the contributors'
  notes (ARCHITECTURE.md, PROTOCOL.md). A user cannot act on them; what a test shows is said as
  a fact about gangrun instead.
- Every figure in the README's "Why gangrun" table (a number with ms, s or MiB) is one that
  docs/benchmarks.md reports, to the README's rounding: the README cannot drift from the
  measurements, and a figure without its benchmark fails.
- Every link from one of these pages, docs/building.md, CONTRIBUTING.md and the changelog to a
  heading (`page.md#anchor`, or `#anchor` on the same page) names a heading that exists, by
  GitHub's anchor rules: lower case, punctuation dropped, spaces as hyphens, a repeated heading
  numbered -1, -2, ...

It reads files only: no build, no gangrun binary, well under a second.
"""
import os
import re
import unittest

import harness

REPO = harness.REPO
CONTRIBUTOR_PAGES = {"docs/building.md"}

INTERNAL_NAME = re.compile(
    r"(?<![\w.-])(?:tests/|lib/|cmake/)[\w./*-]*"  # a path into the test or source tree
    r"|\btest_\w+\.(?:py|cpp)\b"                   # a test script
    r"|\b[\w-]+\.(?:cpp|hpp|c|h)\b"                # a source file or header
    r"|\b(?:ARCHITECTURE|PROTOCOL)\.md\b")         # the contributors' notes
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
FIGURE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)\s?(ms|s|MiB)\b")


def user_pages():
    pages = ["README.md"]
    for name in sorted(os.listdir(os.path.join(REPO, "docs"))):
        path = "docs/" + name
        if name.endswith(".md") and path not in CONTRIBUTOR_PAGES:
            pages.append(path)
    return pages


def read(page):
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        return f.read()


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line


def github_anchor(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    found, seen = set(), {}
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


class UserPages(unittest.TestCase):
    def test_no_page_names_a_test_or_an_internal_file(self):
        found = []
        for page in user_pages():
            for number, line in prose_lines(read(page)):
                for match in INTERNAL_NAME.finditer(line):
                    found.append(f"{page}:{number}: {match.group(0)}")
        self.assertEqual(found, [], "user pages name tests or internal files; say the fact instead")

    def test_every_link_to_a_heading_finds_it(self):
        broken = []
        cache = {}
        for page in user_pages() + sorted(CONTRIBUTOR_PAGES) + ["CONTRIBUTING.md", "CHANGELOG.md"]:
            for number, line in prose_lines(read(page)):
                for target in INLINE_LINK.findall(line):
                    if re.match(r"^[A-Za-z][\w+.-]*:", target) or "#" not in target:
                        continue
                    path, anchor = target.split("#", 1)
                    linked = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                    if not linked.endswith(".md") or not os.path.exists(os.path.join(REPO, linked)):
                        continue  # a missing file is test_repository_references' finding
                    if linked not in cache:
                        cache[linked] = anchors(read(linked))
                    if anchor not in cache[linked]:
                        broken.append(f"{page}:{number}: {target}")
        self.assertEqual(broken, [], "links to headings that do not exist")

    def test_the_readmes_figures_are_the_benchmarks(self):
        readme = read("README.md")
        table = readme[readme.index("## Why gangrun"):]
        table = table[:table.index("\n## ", 1)]
        figures = [m for line in table.splitlines() if line.startswith("|") for m in FIGURE.findall(line)]
        self.assertGreater(len(figures), 10, "the README's table of figures was not found")
        measured = {}
        for value, unit in FIGURE.findall(read("docs/benchmarks.md")):
            measured.setdefault(unit, []).append(float(value.replace(",", ".")))
        unsupported = []
        for value, unit in figures:
            shown = float(value.replace(",", "."))
            decimals = len(value.split(".")[1]) if "." in value else 0
            half_step = 0.5 * 10 ** -decimals
            if not any(abs(m - shown) <= half_step + 1e-9 for m in measured.get(unit, [])):
                unsupported.append(f"{value} {unit}")
        self.assertEqual(unsupported, [], "README figures that docs/benchmarks.md does not report")

    def test_the_anchor_rule_is_githubs(self):
        self.assertEqual(github_anchor("2. A failure, and its report"), "2-a-failure-and-its-report")
        self.assertEqual(github_anchor("`/dev/shm` in containers"), "devshm-in-containers")
        self.assertEqual(github_anchor("Every flag of torchrun, accelerate launch and deepspeed"),
                         "every-flag-of-torchrun-accelerate-launch-and-deepspeed")
        self.assertEqual(github_anchor("The wrong `python3`"), "the-wrong-python3")
        self.assertEqual(github_anchor("NCCL times out: which rank?"), "nccl-times-out-which-rank")


if __name__ == "__main__":
    unittest.main(verbosity=2)
