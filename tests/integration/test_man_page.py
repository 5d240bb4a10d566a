#!/usr/bin/env python3
"""gangrun(1) says what the user pages say, and every page lists every subcommand.

The manual page is the one the build makes: tools/gen_man prints it (GEN_MAN, else
tools/gen_man in the build directory that holds GANGRUN_BIN). Its roff is read, not
formatted, so a row compares word for word:
- its EXIT STATUS rows (code, meaning) equal docs/supervision.md's "Exit codes" table row for
  row, and those of `gangrun store`'s clients docs/store.md's table, after markup is set aside
  on both sides (roff's fonts and escapes; Markdown's code spans, links, and a parenthesised
  link to another page, which a manual page cannot follow);
- its DESCRIPTION tells of the failure window (--failure-window), as docs/supervision.md does;
- every subcommand `gangrun --help` lists is in the manual's SYNOPSIS, in the command list of
  docs/flags.md ("Command line") and in README.md's (the block that begins with
  `gangrun [OPTIONS] [--] PROGRAM`);
- groff formats it without a warning (`groff -man -ww -z`), where groff is installed.
"""
import os
import re
import shutil
import subprocess
import unittest

import harness

SUPERVISION = os.path.join(harness.REPO, "docs", "supervision.md")
FLAGS = os.path.join(harness.REPO, "docs", "flags.md")
STORE = os.path.join(harness.REPO, "docs", "store.md")
README = os.path.join(harness.REPO, "README.md")
GEN_MAN = os.environ.get("GEN_MAN", os.path.join(os.path.dirname(harness.GANGRUN), "tools",
                                                 "gen_man"))
TIMEOUT = 60  # seconds, for gen_man, gangrun --help or groff: only a hang reaches it

ROFF_ESCAPES = {"\\-": "-", "\\(aq": "'", "\\(dq": '"', "\\(ga": "`", "\\e": "\\", "\\&": "",
                "\\fB": "", "\\fI": "", "\\fR": ""}


def unroff(text):
    """The plain text of roff text lines: fonts dropped, escapes as the characters they stand
    for, lines joined by a space."""
    text = re.sub("|".join(re.escape(escape) for escape in ROFF_ESCAPES),
                  lambda match: ROFF_ESCAPES[match.group(0)], text)
    return " ".join(text.split())


def unmarkdown(text):
    """The plain text of a Markdown table cell: ` ([Page](page.md))` dropped, other links as
    their text, code spans as their content, whitespace collapsed."""
    text = re.sub(r"\s*\(\[[^\]]*\]\([^)]*\)\)", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "")
    return " ".join(text.split())


def section(lines, start, stop):
    """The lines after the first that START matches, up to (not with) the first that STOP
    matches after it."""
    begin = next(i for i, line in enumerate(lines) if re.fullmatch(start, line)) + 1
    end = next((i for i in range(begin, len(lines)) if re.fullmatch(stop, lines[i])), len(lines))
    return lines[begin:end]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class ManPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(GEN_MAN, os.X_OK):
            raise AssertionError(f"gen_man is not built: {GEN_MAN} (the build's default target "
                                 "makes it; GEN_MAN names another)")
        cls.page = harness.run_tool([GEN_MAN], timeout=TIMEOUT).stdout
        cls.lines = cls.page.splitlines()

    def exit_status_rows(self):
        """([(code, meaning)] of a launch, [(code, meaning)] of gangrun store's clients): the .TP
        items under EXIT STATUS, before and after its .PP."""
        body = section(self.lines, r'\.SH "EXIT STATUS"', r"\.SH\b.*")
        tables = [[]]
        for line in body:
            if line == ".PP":
                tables.append([])
            elif line == ".TP":
                tables[-1].append([])
            elif tables[-1]:
                tables[-1][-1].append(line)
        self.assertEqual(len(tables), 2, "EXIT STATUS is not a launch's table, .PP, the store's")
        return [[(unroff(term), unroff(" ".join(text))) for term, *text in rows] for rows in tables]

    def docs_table(self, path, heading, columns):
        """[(code, meaning)] of the first table after HEADING in PATH, whose header row is
        COLUMNS: ("outcome", "code") or ("exit", "meaning")."""
        lines = read(path).splitlines()
        start = lines.index(heading) if heading else 0
        rows = []
        in_table = False
        for line in lines[start + 1:]:
            if not line.startswith("|"):
                if in_table:
                    break
                continue
            cells = tuple(cell.strip() for cell in line.strip().strip("|").split(" | "))
            if not in_table:
                in_table = cells == columns
                continue
            if re.fullmatch(r"[-: ]+", "".join(cells)):
                continue
            cells = dict(zip(columns, cells))
            code = cells.get("code", cells.get("exit"))
            meaning = cells.get("outcome", cells.get("meaning"))
            rows.append((unmarkdown(code), unmarkdown(meaning)))
        self.assertTrue(rows, f"{path} has no table headed {columns}")
        return rows

    def test_exit_codes_are_the_docs_table(self):
        launch, store = self.exit_status_rows()
        self.assertEqual(launch, self.docs_table(SUPERVISION, "## Exit codes", ("outcome", "code")),
                         "gangrun(1)'s EXIT STATUS and docs/supervision.md's Exit codes differ")
        self.assertEqual(store, self.docs_table(STORE, None, ("exit", "meaning")),
                         "gangrun(1)'s exit statuses of gangrun store and docs/store.md's differ")

    def test_failure_handling_tells_of_the_failure_window(self):
        description = unroff("\n".join(section(self.lines, r"\.SH DESCRIPTION", r"\.S[HS]\b.*")))
        self.assertIn("failure window", description)
        self.assertIn("--failure-window", description)
        self.assertIn("`--failure-window`", read(SUPERVISION))

    def test_every_subcommand_is_everywhere(self):
        help_text = harness.run_tool([harness.GANGRUN, "--help"], timeout=TIMEOUT).stdout
        usage = help_text.split("\n\n")[0]
        subcommands = re.findall(r"^(?:Usage:)? *gangrun ([a-z][a-z-]*)\b", usage, re.MULTILINE)
        self.assertGreaterEqual(len(subcommands), 5, f"no subcommands in --help's usage:\n{usage}")
        synopsis = section(self.lines, r"\.SH SYNOPSIS", r"\.SH\b.*")
        for path in (FLAGS, README):
            lines = read(path).splitlines()
            start = next((i for i, line in enumerate(lines)
                          if line.startswith("gangrun [OPTIONS] [--] PROGRAM")), None)
            self.assertIsNotNone(start, f"{path} has no command list")
            end = lines.index("```", start)
            listed = {line.split()[1] for line in lines[start + 1:end]
                      if line.startswith("gangrun ")}
            for subcommand in subcommands:
                with self.subTest(page=os.path.relpath(path, harness.REPO), subcommand=subcommand):
                    self.assertIn(subcommand, listed)
        for subcommand in subcommands:
            with self.subTest(page="gangrun(1)", subcommand=subcommand):
                self.assertIn(f".B gangrun {subcommand}", synopsis)

    def test_groff_formats_it_without_warnings(self):
        groff = shutil.which("groff")
        if groff is None:
            self.skipTest("groff is not installed")
        result = subprocess.run([groff, "-man", "-ww", "-z"], input=self.page, text=True,
                                capture_output=True, timeout=TIMEOUT)
        self.assertEqual((result.returncode, result.stderr), (0, ""))


if __name__ == "__main__":
    harness.main()
