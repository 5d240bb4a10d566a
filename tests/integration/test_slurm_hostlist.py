"""slurm::expand_hostlist (lib/slurm/hostlist.hpp) against the real `scontrol show hostnames`.

A few thousand hostlist expressions from a seeded generator (the seed is printed; set
HOSTLIST_SEED to replay one) go through the expand_hostlist helper (EXPAND_HOSTLIST,
tests/helpers/expand_hostlist.cpp) and through scontrol. Where scontrol accepts, the
hosts must be the same, in the same order; where it rejects, we must reject too.

scontrol expands a list with no daemon running, given a slurm.conf with a ClusterName and
a SlurmctldHost (the smallest it accepts), written into a temporary directory here. It
exits 0 even on a malformed list: only the "Invalid hostlist" line on its stderr tells,
so anything on stderr counts as a rejection. "--" comes before the list, which scontrol
would otherwise read as options when it starts with '-'. scontrol takes one list per
call, so the lists we accept go in batches, joined by marker hosts; a batch it rejects is
redone a list at a time, in parallel like the lists we reject.

Left out of the comparison, because we follow newer Slurm or refuse on purpose where
22.05 does otherwise (hostlist.hpp says why; the unit tests pin our side): a suffix after
the last bracket group, '[' without ']', ']' without '[', blanks or '+'
inside brackets, numbers from 2^64 on, '{'. So is 2^64-1, which we expand and 22.05's
scontrol does too, alone, but it crashes on a range that ends there ("a[1-2^64-1]")
and loops forever on "a[2^64-1]b[1]". The suffix has a test of its own that passes on
22.05 (which rejects it) and on a newer Slurm (which must then agree).
"""

import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness

EXPAND = os.environ.get("EXPAND_HOSTLIST", os.path.join(harness.REPO, "build", "tests", "expand_hostlist"))
CASES = 3000
BATCH = 100
TIMEOUT = 60  # seconds, for any one process: only a hang reaches it
SEPARATORS = " ,\t"  # newline, the fourth, is a line break for the helper: unit-tested
MARKER = "marker~"  # a host no generated list names


# ---- generating lists ---------------------------------------------------------

def name(rng):
    return "".join(rng.choice("abnodegpu-._0123456789") for _ in range(rng.randint(0, 5)))


def bound(rng, value):
    return str(value).zfill(rng.choice((0, 0, 0, 2, 3, 4)))


def range_text(rng):
    if rng.random() < 0.03:  # near the top, below 2^64-1, which upsets scontrol
        return f"{2**64 - 2 - rng.randint(0, 5)}-{2**64 - 2}"
    low = rng.randint(0, 120)
    if rng.random() < 0.4:
        return bound(rng, low)
    return f"{bound(rng, low)}-{bound(rng, low + rng.randint(0, 4))}"


def group(rng):
    return "[" + ",".join(range_text(rng) for _ in range(rng.randint(1, 3))) + "]"


def item(rng):
    """A host or a pattern ending in a group (no suffix: 22.05 rejects it)."""
    if rng.random() < 0.3:
        return name(rng) or "h"
    groups = rng.choice((1, 1, 1, 1, 2, 2, 3, 4))
    return "".join(name(rng) + group(rng) for _ in range(groups))


BAD_GROUPS = ("[5-3]", "[]", "[x]", "[-1]", "[-]", "[1--2]", "[1-2-3]", "[1-3:2]", "[000x133]",
              "[1,]", "[,1]", "[1,,2]", "[1-100000]", "[0-65536]", "[a1]", "[1a]", "[0x10]")


def malformed_item(rng):
    """An item with one thing wrong that both scontrol and we must reject."""
    return name(rng) + rng.choice(("", group(rng))) + rng.choice(BAD_GROUPS) + rng.choice(("", group(rng)))


def separators(rng, at_least):
    return "".join(rng.choice(SEPARATORS) for _ in range(rng.randint(at_least, 2)))


def expression(rng):
    items = [item(rng) for _ in range(rng.randint(1, 5))]
    if rng.random() < 0.15:
        items[rng.randrange(len(items))] = malformed_item(rng)
    text = separators(rng, 0)
    for i, one in enumerate(items):
        text += (separators(rng, 1) if i else "") + one
    text += separators(rng, 0)
    if rng.random() < 0.15:  # one character inserted, replaced or removed anywhere
        at = rng.randrange(len(text) + 1)
        new = rng.choice("[]-,0123456789x ")
        text = rng.choice((text[:at] + new + text[at:], text[:at] + new + text[at + 1:],
                           text[:at] + text[at + 1:]))
    return text


GROUP = re.compile(r"\[([^][]*)\]")
RANGE = re.compile(r"(\d+)(?:-(\d*))?")
# Lists longer than this are left out for time (the reference examples hold longer ones);
# slurm::k_max_hosts, our limit, is far above it.
MAX_COMPARED_HOSTS = 20000


def hosts_in_group(inside):
    """How many hosts a well-formed group names; 0 for one both sides reject."""
    count = 0
    for part in inside.split(","):
        match = RANGE.fullmatch(part)
        if not match:
            return 0
        low, high = int(match[1]), int(match[2] or match[1])
        if not low <= high < low + 65536:
            return 0
        count += high - low + 1
    return count


def left_out(text):
    """Whether the comparison leaves text out: it has something we handle unlike 22.05
    on purpose (module docstring), or more than MAX_COMPARED_HOSTS hosts."""
    if "{" in text or re.search(r"[][]", GROUP.sub("", text)):
        return True  # a hostlist function, or a bracket without its partner
    groups = GROUP.findall(text)
    if any(re.search(r"[ \t\n+]", inside) for inside in groups):
        return True
    if any(int(number) >= 2**64 - 1 for inside in groups for number in re.findall(r"\d+", inside)):
        return True
    hosts = 0
    for item in re.split(r"[ ,\t\n]+", GROUP.sub(lambda m: m[0].replace(",", ";"), text)):
        if "[" in item and not item.endswith("]"):
            return True  # a suffix
        count = 1
        for inside in GROUP.findall(item):
            count *= hosts_in_group(inside.replace(";", ","))
        hosts += count if item else 0
    return hosts > MAX_COMPARED_HOSTS


# ---- running both sides ---------------------------------------------------------

def ours(texts):
    """[(accepted, hosts)] from the helper, one line in and one out per list."""
    result = subprocess.run([EXPAND], input="".join(t + "\n" for t in texts), capture_output=True,
                            text=True, timeout=TIMEOUT)
    if result.returncode != 0:
        raise AssertionError(f"{EXPAND}: exit {result.returncode}\n{result.stderr}")
    lines = result.stdout.split("\n")[:-1]
    if len(lines) != len(texts):
        raise AssertionError(f"{EXPAND}: {len(lines)} lines for {len(texts)} lists")
    return [(False, []) if line.startswith("error: ") else (True, line.split()) for line in lines]


class Scontrol:
    def __init__(self, directory):
        conf = os.path.join(directory, "slurm.conf")
        with open(conf, "w") as f:
            f.write("ClusterName=gangrun-test\nSlurmctldHost=localhost\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env["SLURM_CONF"] = conf

    def expand(self, text):
        """(accepted, hosts) for one list."""
        result = subprocess.run(["scontrol", "show", "hostnames", "--", text], capture_output=True,
                                text=True, timeout=TIMEOUT, env=self.env)
        if result.returncode != 0 or result.stderr.strip():
            return False, []
        return True, result.stdout.split()

    def expand_accepted(self, texts, pool):
        """(accepted, hosts) for lists expected to be valid: in batches, marker hosts
        between them; a batch that fails or loses a marker is redone a list at a time."""
        answers = []
        for start in range(0, len(texts), BATCH):
            batch = texts[start:start + BATCH]
            joined = ",".join(f"{t},{MARKER}{i}" for i, t in enumerate(batch))
            accepted, hosts = self.expand(joined)
            split = self.split_at_markers(hosts, len(batch)) if accepted else None
            if split is None:
                answers += list(pool.map(self.expand, batch))
            else:
                answers += [(True, one) for one in split]
        return answers

    @staticmethod
    def split_at_markers(hosts, count):
        parts, current = [], []
        for host in hosts:
            if host == f"{MARKER}{len(parts)}":
                parts.append(current)
                current = []
            else:
                current.append(host)
        return parts if len(parts) == count and not current else None


def scontrol_problem(scontrol):
    """Why scontrol cannot be compared with here, or None."""
    if shutil.which("scontrol") is None:
        return "scontrol not found (Debian package slurm-client or slurm-wlm)"
    try:
        result = subprocess.run(["scontrol", "show", "hostnames", "a[1-2]"], capture_output=True,
                                text=True, timeout=TIMEOUT, env=scontrol.env)
    except (OSError, subprocess.SubprocessError) as error:
        return f"scontrol cannot run: {error}"
    if result.stdout.split() != ["a1", "a2"]:
        return f"scontrol show hostnames 'a[1-2]' gave {result.stdout!r}, stderr {result.stderr.strip()!r}"
    return None


class HostlistMatchesScontrol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(EXPAND, os.X_OK):
            raise unittest.SkipTest(f"EXPAND_HOSTLIST is not an executable file: {EXPAND}")
        cls.tmp = tempfile.mkdtemp(prefix="gangrun-hostlist-")
        cls.scontrol = Scontrol(cls.tmp)
        problem = scontrol_problem(cls.scontrol)
        if problem:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise unittest.SkipTest(problem)
        cls.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def compare(self, texts):
        """Fails with every list where scontrol and we disagree."""
        mine = ours(texts)
        accepted = [t for t, (ok, _) in zip(texts, mine) if ok]
        rejected = [t for t, (ok, _) in zip(texts, mine) if not ok]
        theirs = dict(zip(accepted, self.scontrol.expand_accepted(accepted, self.pool)))
        theirs.update(zip(rejected, self.pool.map(self.scontrol.expand, rejected)))
        print(f"\n{len(texts)} lists compared: {len(accepted)} valid, {len(rejected)} not",
              file=sys.stderr)
        problems = []
        for text, (ok, hosts) in zip(texts, mine):
            their_ok, their_hosts = theirs[text]
            if ok != their_ok:
                problems.append(f"{text!r}: we {'accept' if ok else 'reject'}, scontrol "
                                f"{'accepts' if their_ok else 'rejects'} ({' '.join(their_hosts)[:200]})")
            elif hosts != their_hosts:
                problems.append(f"{text!r}: we give {' '.join(hosts)[:200]}\n"
                                f"    scontrol gives {' '.join(their_hosts)[:200]}")
        self.assertEqual(problems, [], f"{len(problems)} of {len(texts)} lists differ:\n"
                         + "\n".join(problems[:30]))

    def test_reference_examples(self):
        self.compare(["a[1,3-4],b7", "rack[1-2]-node[01-02]", "a[1-2]b[1-2]c[1-2]", "a[1-2][3-4]",
                      "a[08-11]", "x[001-10]", "n[098-101]", "a[8-11]", "tux[2,1-2]",
                      "gpu[1-2,5],cpu[01-02]", "alpha beta,gamma", "a-[1-2]", "r[1-2]n[1,3]",
                      "node1,node1", "a[5-3]", "a[]", "a[x]", "a[-1]", "a[1-100000]", "h[1-3:2]",
                      "a[000x133]", "a[0-65535]", "a[0-65536]", "a[18446744073709551615]", "", " ", ",", "-a", "-[1-2]"])

    def test_random_lists(self):
        seed = int(os.environ.get("HOSTLIST_SEED", random.randrange(2**32)))
        print(f"\nHOSTLIST_SEED={seed}", file=sys.stderr)
        rng = random.Random(seed)
        texts = list(dict.fromkeys(expression(rng) for _ in range(CASES)))
        texts = [t for t in texts if not left_out(t)]
        self.assertGreater(len(texts), CASES * 2 // 3, "the generator makes too few comparable lists")
        self.compare(texts)

    def test_suffix_is_rejected_by_old_slurm_or_expanded_as_we_do(self):
        for text in ("n[1-3]-ib", "node[1-2]x", "a[1-2]b[1-2]c", "gpu[1-2]-ib,x[1]y"):
            with self.subTest(text=text):
                (ok, hosts), = ours([text])
                self.assertTrue(ok)
                their_ok, their_hosts = self.scontrol.expand(text)
                if their_ok:  # Slurm 23.02.5 or later
                    self.assertEqual(their_hosts, hosts)


if __name__ == "__main__":
    harness.main()
