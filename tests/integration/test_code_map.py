#!/usr/bin/env python3
"""lib/ARCHITECTURE.md, the contributors' map of the code, stays a map: one page that a newcomer
reads first, not a narrative.

- At most 1,200 words, and no table row longer than two lines of a wide editor (220 characters):
  details belong in each module's main header, which the row names.
- Every folder of lib/ that holds a CMakeLists.txt (a module) has a row, and every `lib/...` folder
  a row names exists; every file a row names is in its folder, and every path the page names is
  in lib/ or the repository.
- No section tells history ("what changed", "before"): CHANGELOG.md has it.
- It is the repository's one layout table: docs/building.md links to it instead of keeping a
  second one.

It reads files only: no build, no gangrun binary, well under a second.
"""
import os
import re
import unittest

import harness

REPO = harness.REPO
MAP = os.path.join(REPO, "lib", "ARCHITECTURE.md")
MAX_WORDS = 1200
MAX_ROW = 220
ROW_FOLDER = re.compile(r"^\| `((?:lib|app|tests|tools|cmake|python|completions|scripts)/[\w/]*)` \|")
# Every file a row names by its bare name (`keys.hpp`), which is then in the row's folder.
NAMED_FILE = re.compile(r"`(\w+\.(?:hpp|cpp|md))`")
# A path below lib/ named anywhere on the page (`agent/node_agent.hpp`).
LIB_PATH = re.compile(r"`((?:[a-z_]+/)+[\w]+\.(?:hpp|cpp|md))`")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def modules():
    """Every folder under lib/ with a CMakeLists.txt, as "lib/name/" (nested ones too)."""
    found = set()
    for here, dirs, files in os.walk(os.path.join(REPO, "lib")):
        if "CMakeLists.txt" in files and here != os.path.join(REPO, "lib"):
            found.add(os.path.relpath(here, REPO) + "/")
    return found


class CodeMap(unittest.TestCase):
    def setUp(self):
        self.text = read(MAP)

    def rows(self):
        return [line for line in self.text.splitlines() if line.startswith("| `")]

    def test_a_page_long(self):
        words = len(self.text.split())
        self.assertLessEqual(words, MAX_WORDS, f"lib/ARCHITECTURE.md has {words} words")
        long_rows = [row[:60] + "..." for row in self.rows() if len(row) > MAX_ROW]
        self.assertEqual(long_rows, [], f"table rows over {MAX_ROW} characters")

    def test_every_module_has_a_row_and_every_row_a_folder(self):
        named = {m.group(1) for m in map(ROW_FOLDER.match, self.rows()) if m}
        self.assertEqual(sorted(modules() - named), [], "modules without a row")
        missing = sorted(folder for folder in named if not os.path.isdir(os.path.join(REPO, folder)))
        self.assertEqual(missing, [], "rows naming a folder that does not exist")

    def test_every_file_named_is_there(self):
        wrong = []
        for row in self.rows():
            folder = ROW_FOLDER.match(row)
            if folder and folder.group(1).startswith("lib/"):
                for name in NAMED_FILE.findall(row):
                    if not os.path.isfile(os.path.join(REPO, folder.group(1), name)):
                        wrong.append(folder.group(1) + name)
        for path in LIB_PATH.findall(self.text):
            if not (os.path.exists(os.path.join(REPO, "lib", path)) or os.path.exists(os.path.join(REPO, path))):
                wrong.append(path)
        self.assertEqual(wrong, [], "files the map names that are not there")

    def test_no_history(self):
        headings = [line for line in self.text.splitlines() if line.startswith("#")]
        told = [h for h in headings if re.search(r"(?i)\b(changed|history|before|redesign)\b", h)]
        self.assertEqual(told, [], "history belongs in CHANGELOG.md")

    def test_one_layout_table(self):
        building = read(os.path.join(REPO, "docs", "building.md"))
        self.assertNotRegex(building, r"(?m)^\| *folder *\|", "docs/building.md keeps a second layout table")
        self.assertIn("lib/ARCHITECTURE.md", building)

    def test_the_checks_catch_what_they_look_for(self):
        self.assertTrue(ROW_FOLDER.match("| `lib/store/` | the store (`server.hpp`) | `util` |"))
        self.assertEqual(NAMED_FILE.findall("the store (`server.hpp`, `PROTOCOL.md`)"), ["server.hpp", "PROTOCOL.md"])
        self.assertEqual(LIB_PATH.findall("`agent/node_agent.hpp` and `tests/unit/fake_store.hpp`"),
                         ["agent/node_agent.hpp", "tests/unit/fake_store.hpp"])
        self.assertIn("lib/store/", modules())


if __name__ == "__main__":
    unittest.main(verbosity=2)
