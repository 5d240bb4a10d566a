#!/usr/bin/env python3
"""The remote starts (lib/remote/: gangrun started on other nodes through srun, ssh or mpirun)
keep their shape.

- The gangrun command lines they build for the other nodes, and their messages, name gangrun's
  own options through opt:: constants (lib/config/option_names.hpp, through self_option), never
  as text: no string literal in lib/remote/*.cpp holds "--NAME" for an option NAME of gangrun's
  (either spelling, aliases too). A renamed option then fails to compile there instead of
  leaving the other nodes a spelling gangrun no longer reads. The options of the tools (srun's
  --ntasks, mpirun's --wdir) are text, as they are not gangrun's.
- Only lib/commands/ includes the module; the node agent (lib/agent/) knows nothing of it.

It reads files only: no build, no gangrun binary, well under a second.
"""
import os
import re
import unittest

import harness

REPO = harness.REPO
LIB = os.path.join(REPO, "lib")
REMOTE = os.path.join(LIB, "remote")
# The option table's files, where a name is text by design (scripts/option-name-literals).
TABLE_FILES = ("option_table.cpp", "accelerate/accelerate_options.cpp",
               "deepspeed/deepspeed_options.cpp", "hosts/hosts_options.cpp")
# A long option in a string literal: "--" and a name, snake or dash case.
LONG_OPTION = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9_-]*)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def option_names():
    """Every name and alias of gangrun's options, in snake_case."""
    names = set(re.findall(r"\bX\((\w+)\)", read(os.path.join(LIB, "config", "option_names.hpp"))))
    for name in TABLE_FILES:
        text = read(os.path.join(LIB, "config", name))
        for block in re.findall(r"\.aliases\s*=\s*\{([^}]*)\}", text):
            names.update(re.findall(r'"([a-z0-9_]+)"', block))
    return names


def string_literals(source):
    """(line number, contents) of each string literal of C++ source, comments skipped."""
    literals = []
    i, line, n = 0, 1, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += source.count("\n", i, end)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            if c == '"':
                literals.append((line, source[i + 1:j]))
            line += source.count("\n", i, j)
            i = j + 1
        else:
            if c == "\n":
                line += 1
            i += 1
    return literals


def own_options_in(source, names):
    """(line, "--name") for each of gangrun's options written as text in source."""
    found = []
    for line, literal in string_literals(source):
        for spelled in LONG_OPTION.findall(literal):
            if spelled.replace("-", "_") in names:
                found.append((line, "--" + spelled))
    return found


class RemoteStartLayout(unittest.TestCase):
    def test_the_scanner_sees_what_it_looks_for(self):
        names = option_names()
        self.assertIn("master_port", names)
        self.assertIn("main_process_port", names)  # an alias
        source = ('a({"--master_port", "29500"}); // "--nnodes" in a comment\n'
                  '/* "--node_rank" */ b("--ntasks=2", "x --dry-run y", \'"\');\n')
        self.assertEqual(own_options_in(source, names), [(1, "--master_port"), (2, "--dry-run")])

    def test_no_option_of_gangrun_is_spelled_as_text_in_the_remote_starts(self):
        names = option_names()
        sources = sorted(f for f in os.listdir(REMOTE) if f.endswith(".cpp"))
        self.assertIn("ssh_start.cpp", sources)
        found = []
        for name in sources:
            for line, spelled in own_options_in(read(os.path.join(REMOTE, name)), names):
                found.append(f"lib/remote/{name}:{line}: {spelled}")
        self.assertEqual(found, [], "name these through opt:: constants and self_option()")

    def test_only_the_commands_include_the_remote_starts(self):
        includes = re.compile(r'^\s*#\s*include\s+"remote/', re.MULTILINE)
        found = []
        for folder, _, files in os.walk(LIB):
            module = os.path.relpath(folder, LIB).split(os.sep)[0]
            if module in ("remote", "commands"):
                continue
            for name in files:
                if name.endswith((".cpp", ".hpp")) and includes.search(read(os.path.join(folder, name))):
                    found.append(os.path.relpath(os.path.join(folder, name), REPO))
        self.assertEqual(found, [])
        # The remote starts, by the names they had there (the agent's own round_start stays).
        remote_starts = ("srun_start.", "ssh_start.", "mpirun_start.", "tool_start.", "remote_start.")
        self.assertEqual([f for f in os.listdir(os.path.join(LIB, "agent")) if f.startswith(remote_starts)], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
