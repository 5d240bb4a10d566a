#!/usr/bin/env python3
"""The flag table (docs/flags.md, "Every flag of torchrun, accelerate launch and deepspeed"):
each row's claim is run, and the table is checked to name every flag the real tools define.

A row of the table is `| TOOL | FLAGS | GANGRUN |`: TOOL is torchrun, accelerate or deepspeed;
FLAGS the tool's spellings of one option, each in backticks; GANGRUN starts with what gangrun
does with it (same, mapped, accepted, refused) and says how in words. What is run to check the
row lives beside this test, in flag_table_checks.txt (its header says the language), keyed by
TOOL and FLAGS: a row without a check, or a check without its row, fails here, so the two cannot
drift apart.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness

TABLE_FILE = "docs/flags.md"
TABLE_PATH = os.path.join(harness.REPO, TABLE_FILE)
CHECKS_FILE = "tests/integration/flag_table_checks.txt"
CHECKS_PATH = os.path.join(harness.REPO, CHECKS_FILE)
TABLE_HEADING = "## Every flag of torchrun, accelerate launch and deepspeed"
TOOLS = ("torchrun", "accelerate", "deepspeed")
VERDICTS = ("same", "mapped", "accepted", "refused")

# The real tools' option strings, read from their argparse parsers (parse_args is
# replaced so that the parser a tool builds inside its main can be captured).
DUMP_PARSER = r"""
import argparse, json, os, sys
os.environ.setdefault("DS_ACCELERATOR", "cpu")
captured = {}
def grab(self, *args, **kwargs):
    captured["parser"] = self
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = grab
tool = sys.argv[1]
if tool == "torchrun":
    from torch.distributed.run import get_args_parser
    parser = get_args_parser()
elif tool == "accelerate":
    from accelerate.commands.launch import launch_command_parser
    parser = launch_command_parser()
else:
    from deepspeed.launcher import runner
    try:
        runner.parse_args([])
    except SystemExit:
        pass
    parser = captured["parser"]
print(json.dumps([a.option_strings for a in parser._actions if a.option_strings]))
"""


def split_row(line):
    """The cells of a Markdown table row; `\\|` is a literal bar."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [cell.strip().replace("\\|", "|") for cell in cells]


def read_table():
    """[(line_number, tool, [flags], verdict)] of the table in TABLE_FILE."""
    with open(TABLE_PATH, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = lines.index(TABLE_HEADING)
    rows = []
    in_table = False
    for number, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = split_row(line)
        if cells[0] in ("Tool", "---") or set(cells[0]) <= {"-", " "}:
            continue
        assert len(cells) == 3, f"{TABLE_FILE}:{number}: {len(cells)} cells, want 3: {line}"
        tool, flags_cell, gangrun_cell = cells
        flags = re.findall(r"`([^`]+)`", flags_cell)
        verdict = gangrun_cell.split(":")[0].split()[0].strip("*").lower() if gangrun_cell else ""
        rows.append((number, tool, flags, verdict))
    return rows


def read_checks():
    """{(tool, (flags...)): (line_number, args, [expectations])} of CHECKS_FILE."""
    checks = {}
    with open(CHECKS_PATH, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{CHECKS_FILE}:{number}"
            key, sep, check = line.partition(" | ")
            assert sep, f"{where}: no ' | ' between the flags and the check: {line}"
            tool, _, flags = key.partition(" ")
            match = re.fullmatch(r"(.*?)\s*→\s*(.+)", check)
            assert match, f"{where}: the check is not ARGS → WHAT: {check!r}"
            expectations = [part.strip() for part in match.group(2).split(";") if part.strip()]
            flags = tuple(flag.strip() for flag in flags.split(","))
            assert (tool, flags) not in checks, f"{where}: {tool} {flags} is checked twice"
            checks[(tool, flags)] = (number, match.group(1), expectations)
    return checks


class FlagTable(harness.GangrunTestCase):
    @classmethod
    def setUpClass(cls):
        cls.rows = read_table()
        cls.checks = read_checks()
        cls.workdir = tempfile.mkdtemp(prefix="gangrun-flag-table-")
        with open(os.path.join(cls.workdir, "train.py"), "w") as f:
            f.write("print('train')\n")
        # The hostfile some rows name: this host alone, which runs here unless ssh is asked for.
        with open(os.path.join(cls.workdir, "hostfile"), "w") as f:
            f.write("localhost slots=2\n")
        # accelerate's YAML config that the --config_file row names.
        with open(os.path.join(cls.workdir, "accelerate.yaml"), "w") as f:
            f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                    "num_machines: 1\nnum_processes: 2\nmixed_precision: bf16\nuse_cpu: true\n")

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.workdir], check=False)

    def checked_rows(self):
        """(where, tool, flags, verdict, args, expectations) of every row that has a check."""
        for number, tool, flags, verdict in self.rows:
            if (check := self.checks.get((tool, tuple(flags)))) is not None:
                check_number, args, expectations = check
                where = f"{TABLE_FILE}:{number}, {CHECKS_FILE}:{check_number}"
                yield where, tool, flags, verdict, args, expectations

    def test_rows_are_well_formed(self):
        self.assertGreater(len(self.rows), 100, "the table is missing or cut short")
        seen = set()
        for number, tool, flags, verdict in self.rows:
            where = f"{TABLE_FILE}:{number}"
            self.assertIn(tool, TOOLS, where)
            self.assertTrue(flags, f"{where}: no flag in backticks")
            self.assertIn(verdict, VERDICTS, f"{where}: the gangrun cell starts with {verdict!r}")
            for flag in flags:
                self.assertNotIn((tool, flag), seen, f"{where}: {tool} {flag} is listed twice")
                seen.add((tool, flag))
        for where, tool, flags, verdict, args, expectations in self.checked_rows():
            if verdict == "refused":
                self.assertEqual(expectations, ["exit 2"], f"{where}: a refused flag exits 2")

    def test_every_row_has_a_check_and_every_check_a_row(self):
        documented = {(tool, tuple(flags)): number for number, tool, flags, _ in self.rows}
        unchecked = [f"{TABLE_FILE}:{number}: {tool} {', '.join(flags)}"
                     for (tool, flags), number in documented.items()
                     if (tool, flags) not in self.checks]
        self.assertEqual(unchecked, [], f"rows of the table without a line in {CHECKS_FILE}")
        orphans = [f"{CHECKS_FILE}:{number}: {tool} {', '.join(flags)}"
                   for (tool, flags), (number, _, _) in self.checks.items()
                   if (tool, flags) not in documented]
        self.assertEqual(orphans, [], f"checks of flags that have no row in {TABLE_FILE}'s table")

    def run_row(self, args, refused):
        argv = [harness.GANGRUN] + ([] if refused else ["--dry-run", "--json"]) + args.split()
        env = harness.clean_env(DS_ACCELERATOR="cpu")
        return subprocess.run(argv, cwd=self.workdir, env=env, capture_output=True, text=True,
                              timeout=harness.EVENT_TIMEOUT, stdin=subprocess.DEVNULL)

    def check_expectation(self, where, flags, expectation, result):
        if expectation.startswith("stdout has "):
            self.assertEqual(result.returncode, 0, f"{where}: {result.stderr}")
            self.assertIn(expectation[len("stdout has "):], result.stdout, where)
            return
        if expectation.startswith("exit "):
            code = int(expectation.split()[1])
            self.assertEqual(result.returncode, code, f"{where}: {result.stderr}")
            self.assertTrue(any(flag.lstrip("-").replace("-", "_") in
                                result.stderr.replace("-", "_") for flag in flags),
                            f"{where}: the error does not name the flag: {result.stderr}")
            return
        self.assertEqual(result.returncode, 0, f"{where}: exit {result.returncode}: {result.stderr}")
        if m := re.fullmatch(r"run by (test_\w+\.py)", expectation):
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)), m.group(1))
            self.assertTrue(os.path.isfile(path), f"{where}: {m.group(1)} does not exist")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            self.assertTrue(any(flag in text or flag.replace("_", "-") in text for flag in flags),
                            f"{where}: {m.group(1)} never names {flags}")
            return
        try:
            doc = json.loads(result.stdout)
        except json.JSONDecodeError:
            self.fail(f"{where}: the dry run did not print JSON: {result.stdout[:300]}")
        workers = harness.dry_run_workers(doc)
        first = workers[0] if workers else {"env": {}, "argv": []}
        if m := re.fullmatch(r"workers (\d+)", expectation):
            self.assertEqual(len(workers), int(m.group(1)), where)
        elif m := re.fullmatch(r"world (\d+)", expectation):
            self.assertEqual(doc["world_size"], int(m.group(1)), where)
        elif m := re.fullmatch(r"(\w+) unset", expectation):
            self.assertNotIn(m.group(1), first["env"], where)
        elif m := re.fullmatch(r"argv ends (\S+)", expectation):
            self.assertEqual(first["argv"][-1], m.group(1), f"{where}: argv {first['argv']}")
        elif m := re.fullmatch(r"option (\w+)=(.*)", expectation):
            options = doc.get("options", {})
            self.assertIn(m.group(1), options, where)
            self.assertEqual(options[m.group(1)]["value"], m.group(2), where)
        elif m := re.fullmatch(r"([A-Z_][A-Z0-9_]*)=(.*)", expectation):
            self.assertEqual(first["env"].get(m.group(1)), m.group(2),
                             f"{where}: rank 0's {m.group(1)}")
        else:
            self.fail(f"{where}: unknown expectation {expectation!r}")

    def test_each_row_holds(self):
        for where, tool, flags, verdict, args, expectations in self.checked_rows():
            where = f"{where} ({tool} {flags[0] if flags else '?'}: `{args}`)"
            with self.subTest(row=where):
                refused = expectations and expectations[0].startswith("exit")
                result = self.run_row(args, refused)
                for expectation in expectations:
                    self.check_expectation(where, flags, expectation, result)

    def test_every_flag_of_the_real_tools_is_listed(self):
        listed = {(tool, flag) for _, tool, flags, _ in self.rows for flag in flags}
        for tool in TOOLS:
            harness.peer_tool(tool)  # skips the whole test when a peer is missing
        for tool in TOOLS:
            with self.subTest(tool=tool):
                result = subprocess.run([harness.PEER_PYTHON, "-c", DUMP_PARSER, tool],
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 0, result.stderr[-2000:])
                defined = {flag for strings in json.loads(result.stdout) for flag in strings}
                missing = sorted(flag for flag in defined if (tool, flag) not in listed)
                self.assertEqual(missing, [], f"{tool} flags missing from {TABLE_FILE}'s table")
                extra = sorted(flag for (t, flag) in listed if t == tool and flag not in defined)
                self.assertEqual(extra, [],
                                 f"{TABLE_FILE}'s table lists flags {tool} does not have")


if __name__ == "__main__":
    harness.main()
