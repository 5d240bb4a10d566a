#!/usr/bin/env python3
"""Every Catch2 case in tests/unit/ can be run by name from ctest.

catch_discover_tests registers each case as a ctest test whose command line passes the case's
name to unit_tests as an argument. A name that begins with '-' is then read as an option, and the
case fails in ctest without running (it still passes when unit_tests runs whole), so no case name
may begin with one. Say the option later in the sentence instead ("With --on-hang report ...").

It reads files only: no build, no binary.
"""
import os
import re
import unittest

import harness

UNIT = os.path.join(harness.REPO, "tests", "unit")
# TEST_CASE("name", ...) and its kin; the name is the first string literal.
CASE = re.compile(r'\b(?:TEST_CASE|SCENARIO|TEST_CASE_METHOD\s*\(\s*\w+\s*,)\s*\(?\s*"((?:[^"\\]|\\.)*)"')


def case_names(text):
    return CASE.findall(text)


class UnitCaseNames(unittest.TestCase):
    def test_no_case_name_begins_with_a_dash(self):
        found, cases = [], 0
        for name in sorted(os.listdir(UNIT)):
            if not name.endswith(".cpp"):
                continue
            with open(os.path.join(UNIT, name), encoding="utf-8", errors="replace") as f:
                for case in case_names(f.read()):
                    cases += 1
                    if case.lstrip().startswith("-"):
                        found.append(f"tests/unit/{name}: {case}")
        self.assertGreater(cases, 500, "the pattern no longer finds the unit cases")
        self.assertEqual(found, [], "ctest would pass these names to Catch2 as options")

    def test_the_pattern_finds_what_it_looks_for(self):
        self.assertEqual(case_names('TEST_CASE("--on-hang report goes on", "[doctor]") {'),
                         ["--on-hang report goes on"])
        self.assertEqual(case_names('TEST_CASE_METHOD(Rig, "a \\"quoted\\" name") {'),
                         ['a \\"quoted\\" name'])
        self.assertEqual(case_names("// TEST_CASE is Catch2's macro"), [])


if __name__ == "__main__":
    unittest.main()
