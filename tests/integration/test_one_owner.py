#!/usr/bin/env python3
"""Each of these decisions is spelled in one file of lib/, and this test fails, naming FILE:LINE,
when a second spelling comes back:

- the store's default port: the number 29500 is written only in lib/store/default_port.hpp
  (store::k_default_port); every other default, --help text and gangrun(1) paragraph is built
  from that constant.
- the temporary-directory rule ($TMPDIR unless unset or empty, else /tmp): only
  lib/util/temp_dir.cpp reads the variable, so the string literal "TMPDIR" appears nowhere else.
- the rendezvous backends' names: the string literals "c10d" and "static" appear only in the
  table of lib/config/rendezvous_backend.hpp; everyone else compares RendezvousBackend values.
- the store keys' grammar: only lib/rendezvous/keys.{hpp,cpp} cut a key apart. Elsewhere no line
  strips a key prefix by its length (k_prefix.size(), remove_prefix(keys::...)), and no line asks
  whether a key starts with one of the grammar's kinds ("join/", "failed/", ...).
- the job model: one schedulers::Job for every job system, Slurm's included (its `slurm` part);
  no second field or variant for Slurm's job comes back (`slurm_job`, `scheduler_job`,
  `AnyJob` as names of code).
- the hang watch's progress: the doctor tells it times (HangWatch::Progress); no stand-in worker
  of rank -1 is made anywhere in lib/ to carry a time (the old one was in lib/agent/).
- the tools' typers (type_accelerate_values, ...) return what they add; none takes Options to
  write into, so build_options.cpp alone assigns their results.

Every lib/**/*.cpp and *.hpp is read, and nothing is exempt by its path. What is checked is the
code: comments are dropped first, so a comment may still say "port 29500" or "$TMPDIR" to explain
itself. String literals are code (a literal is where a default or a name hides). One literal is
allowed besides the owners, and it is named below with the reason: gangrun(1)'s example command
line passes --master_port 29500 as a user types it; it shows a value a user chose, not a default.

It reads files only: no build, no gangrun binary.
"""
import os
import re
import unittest

import harness

REPO = harness.REPO
LIB = os.path.join(REPO, "lib")

DEFAULT_PORT_OWNER = "lib/store/default_port.hpp"
TEMP_DIR_OWNER = "lib/util/temp_dir.cpp"
BACKEND_OWNER = "lib/config/rendezvous_backend.hpp"
KEY_OWNERS = {"lib/rendezvous/keys.hpp", "lib/rendezvous/keys.cpp"}

# (file, the line's code holding the number): a documentation example, not a default.
PORT_EXAMPLES = {
    ("lib/cli_docs/man_page.cpp", '"        --master_addr node0 --master_port 29500 train.py"'),
}

PORT = re.compile(r"(?<![\w.])29500(?!\w|\.\d)")
TMPDIR_LITERAL = re.compile(r'"TMPDIR"')
BACKEND_LITERAL = re.compile(r'"(?:c10d|static)"')
KEY_KINDS = ("join", "conn", "alive", "failed", "result", "welcome", "round", "end", "nonce",
             "latest", "waiting", "ask", "asked", "request", "requests")
KEY_PREFIX_CUT = re.compile(
    r"\b(?:k_prefix|k_doctor_prefix|k_run_wide_prefix)\s*\.\s*(?:size|length)\s*\("
    r"|remove_prefix\s*\(\s*(?:rendezvous::)?keys::")
JOB_MODEL = re.compile(r"\b(?:slurm_job|scheduler_job|AnyJob)\b")
FAKE_WORKER = re.compile(r"\.rank\s*=\s*-1\b")
TYPER_WRITES = re.compile(r"\btype_\w+_values\s*\([^)]*(?<!const )\bOptions\s*&")
KEY_KIND_TEST = re.compile(r'starts_with\(\s*"(?:%s)/"' % "|".join(KEY_KINDS))
# A file without any of these cannot hold a finding, and is not read further.
TRIGGERS = ("29500", '"TMPDIR"', '"c10d"', '"static"', "_prefix", "starts_with", "slurm_job",
            "scheduler_job", "AnyJob", "rank", "_values")


def code_lines(text):
    """(line number, code) for every line of a C++ file, comments replaced by spaces; string
    and character literals are kept, raw strings R"d(...)d" included."""
    out = []
    i, n = 0, len(text)
    line, current = 1, []
    in_block = False

    def newline():
        nonlocal line, current
        out.append((line, "".join(current)))
        line += 1
        current = []

    while i < n:
        c = text[i]
        if in_block:
            if text.startswith("*/", i):
                in_block = False
                i += 2
                continue
            if c == "\n":
                newline()
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            in_block = True
            i += 2
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            closing = ")" + raw.group(1) + '"'
            end = text.find(closing, i + raw.end())
            end = n if end < 0 else end + len(closing)
            for ch in text[i:end]:
                if ch == "\n":
                    newline()
                else:
                    current.append(ch)
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            current.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "\n":
            newline()
        else:
            current.append(c)
        i += 1
    out.append((line, "".join(current)))
    return out


def lib_sources():
    """Paths relative to the repository of every lib/**/*.cpp and *.hpp, sorted."""
    found = []
    for root, _dirs, files in os.walk(LIB):
        for name in files:
            if name.endswith((".cpp", ".hpp")):
                found.append(os.path.relpath(os.path.join(root, name), REPO))
    return sorted(found)


def findings(path, text):
    """(check, 'FILE:LINE: code') for every second spelling in one file's text."""
    found = []
    for number, code in code_lines(text):
        where = f"{path}:{number}: {code.strip()}"
        if PORT.search(code) and path != DEFAULT_PORT_OWNER and \
                (path, code.strip().rstrip(",}").rstrip()) not in PORT_EXAMPLES:
            found.append(("port", where))
        if TMPDIR_LITERAL.search(code) and path != TEMP_DIR_OWNER:
            found.append(("tmpdir", where))
        if BACKEND_LITERAL.search(code) and path != BACKEND_OWNER:
            found.append(("backend", where))
        if (KEY_PREFIX_CUT.search(code) or KEY_KIND_TEST.search(code)) and path not in KEY_OWNERS:
            found.append(("keys", where))
        if JOB_MODEL.search(code):
            found.append(("job", where))
        if FAKE_WORKER.search(code):
            found.append(("progress", where))
        if TYPER_WRITES.search(code):
            found.append(("typer", where))
    return found


def all_findings():
    found = []
    for path in lib_sources():
        with open(os.path.join(REPO, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        if any(trigger in text for trigger in TRIGGERS):
            found.extend(findings(path, text))
    return found


class OneOwner(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.found = all_findings()

    def check(self, kind, message):
        lines = [where for check, where in self.found if check == kind]
        self.assertEqual(lines, [], message + ":\n" + "\n".join(lines))

    def test_the_owners_exist(self):
        for path in [DEFAULT_PORT_OWNER, TEMP_DIR_OWNER, BACKEND_OWNER, *KEY_OWNERS]:
            self.assertTrue(os.path.isfile(os.path.join(REPO, path)), path)
        self.assertGreater(len(lib_sources()), 100)

    def test_the_default_port_is_written_once(self):
        self.check("port", "29500 outside " + DEFAULT_PORT_OWNER + " (use store::k_default_port)")

    def test_only_the_temp_dir_rule_reads_tmpdir(self):
        self.check("tmpdir", '"TMPDIR" outside ' + TEMP_DIR_OWNER + " (use temp_dir(env))")

    def test_backend_names_are_in_one_table(self):
        self.check("backend", '"c10d" or "static" outside ' + BACKEND_OWNER +
                   " (compare RendezvousBackend values; print with backend_name())")

    def test_only_the_key_grammar_cuts_keys_apart(self):
        self.check("keys", "a store key cut apart outside rendezvous/keys (use keys::parse)")

    def test_one_job_model(self):
        self.check("job", "a second job model (use schedulers::Job, its slurm part for Slurm's)")

    def test_the_hang_watch_is_told_times(self):
        self.check("progress", "a stand-in worker of rank -1 (tell HangWatch::Progress times)")

    def test_the_typers_return_what_they_add(self):
        self.check("typer", "a typer that writes into Options (return what it adds)")

    def test_the_checks_catch_what_they_look_for(self):
        def kinds(path, text):
            return [kind for kind, _ in findings(path, text)]

        self.assertEqual(kinds("lib/x.cpp", "int port = 29500;\n"), ["port"])
        self.assertEqual(kinds("lib/x.cpp", "auto p = o.master_port.value_or(29500);"), ["port"])
        self.assertEqual(kinds("lib/x.cpp", 'auto help = "else 29500";'), ["port"])
        self.assertEqual(kinds(DEFAULT_PORT_OWNER, "inline constexpr int k = 29500;"), [])
        self.assertEqual(kinds("lib/x.cpp", "// port 29500 by default\n/* 29500 */ int x;"), [])
        self.assertEqual(kinds("lib/x.cpp", "int x = 295000; int y = 129500; double z = 29500.5;"),
                         [])
        self.assertEqual(kinds("lib/x.cpp", '"else 127.0.0.1:29500.\\n"'), ["port"])
        self.assertEqual(kinds("lib/x.cpp", 'env_lookup(env, "TMPDIR").value_or("/tmp")'),
                         ["tmpdir"])
        self.assertEqual(kinds("lib/x.cpp", '"Point TMPDIR at a writable directory"'), [])
        self.assertEqual(kinds(TEMP_DIR_OWNER, 'constexpr auto k = "TMPDIR";'), [])
        self.assertEqual(kinds("lib/x.cpp", 'if (o.rdzv_backend == "c10d") {'), ["backend"])
        self.assertEqual(kinds("lib/x.cpp", 'o.rdzv_backend = "static";'), ["backend"])
        self.assertEqual(kinds("lib/x.cpp", '"needs --rdzv_backend c10d"; static int x;'), [])
        self.assertEqual(kinds("lib/x.cpp", 'if (rest.starts_with("join/")) f(rest.substr(5));'),
                         ["keys"])
        self.assertEqual(kinds("lib/x.cpp", "rest.remove_prefix(keys::k_prefix.size());"),
                         ["keys"])
        self.assertEqual(kinds("lib/x.cpp", "rest.remove_prefix(keys::k_doctor_prefix.size());"),
                         ["keys"])
        self.assertEqual(kinds("lib/rendezvous/keys.cpp", 'take_kind(rest, "join");'), [])
        self.assertEqual(kinds("lib/x.hpp", "std::optional<slurm::Job> slurm_job;"), ["job"])
        self.assertEqual(kinds("lib/x.cpp", "using AnyJob = std::variant<A, B>;"), ["job"])
        self.assertEqual(kinds("lib/x.cpp", "Expected<Job> read_slurm_job(const EnvMap& env);"), [])
        self.assertEqual(kinds("lib/doctor/watch/x.cpp", "w.push_back({.rank = -1, .pid = 0});"),
                         ["progress"])
        self.assertEqual(kinds("lib/x.cpp",
                               "Expected<void> type_hosts_values(const LayeredValues& v, Options& o);"),
                         ["typer"])
        self.assertEqual(kinds("lib/x.cpp", "Expected<HostsAdditions> type_hosts_values("
                               "const LayeredValues& v, const Options& o);"), [])
        # A raw string and a string holding "//" are code, not comments.
        self.assertEqual(kinds("lib/x.cpp", 'auto u = "http://h:29500";'), ["port"])
        self.assertEqual(kinds("lib/x.cpp", 'auto s = R"x(\n"static"\n)x";'), ["backend"])
        # Lines are numbered as the file numbers them, across comments and raw strings.
        numbered = findings("lib/x.cpp", '/* a\nb */\nauto s = R"(\n)";\nint p = 29500;\n')
        self.assertEqual(numbered, [("port", "lib/x.cpp:5: int p = 29500;")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
