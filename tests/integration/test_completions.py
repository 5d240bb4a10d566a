"""`gangrun completion bash|zsh|fish` (docs/building.md, "Installing"): the checked-in scripts under
completions/ are exactly what the binary prints, and each script, loaded into the real
shell, completes options, their values, directories, the program, the program's own
arguments and the subcommands.

How each shell is driven:
- bash: `bash --norc --noprofile -c` sources bash-completion and the script, sets
  COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT as readline would, calls the function
  `complete -p gangrun` names and prints COMPREPLY;
- fish: `fish --no-config -c 'source SCRIPT; complete -C LINE'`;
- zsh: an interactive zsh (compinit, the script on $fpath) in a tmux session on a server
  of our own (`tmux -L <unique>`, its socket in the temporary directory, killed at the
  end), one session per line; the line is typed, Tab runs complete-word, draws the
  listing, sets the pane title and touches a file, and the pane is read once tmux shows
  that title. When tmux loses its server (its own start-up and shutdown races on a busy
  machine), the case is redone on a new server, a few times at most.

zsh, fish and tmux come from scripts/install-deps; without them these tests fail.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

from harness import GANGRUN, REPO

COMPLETIONS_DIR = os.path.join(REPO, "completions")
SCRIPT_FILES = {"bash": "gangrun.bash", "zsh": "_gangrun", "fish": "gangrun.fish"}
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
TIMEOUT = 120  # seconds, for any one shell or tmux command: only a hang reaches it
ZSH_PROMPT = "ZSHTEST> "

# (line typed before Tab, offered: all of these, never: none of these). Candidates are
# compared without a leading "./" or "--option=", and without a trailing "/" or "*".
# Run in a directory holding subdir/, notes.txt and train.py.
CASES = [
    ("gangrun --npr", {"--nproc_per_node", "--nproc-per-node"}, {"--num_processes"}),
    ("gangrun --nproc_per_node ", {"auto", "gpu", "xpu", "cpu"}, set()),
    ("gangrun --redirects ", {"0", "1", "2", "3"}, set()),
    ("gangrun -t ", {"0", "1", "2", "3"}, set()),
    ("gangrun --log_dir ", {"subdir"}, {"notes.txt", "train.py"}),
    ("gangrun --log-dir n", set(), {"notes.txt"}),
    ("gangrun --nproc_per_node 2 ./", {"train.py"}, {"notes.txt"}),
    ("gangrun -n 2 no", set(), {"notes.txt"}),
    ("gangrun dev", {"devices"}, set()),
    ("gangrun pre", {"preflight"}, set()),
    ("gangrun -- dev", set(), {"devices"}),
    ("gangrun --accelerator ", {"auto", "cuda", "xpu", "rocm", "cpu", "hpu", "npu", "neuron"}, set()),
    ("gangrun --accelerator=c", {"cpu", "cuda"}, {"auto", "xpu"}),
    ("gangrun completion ", {"bash", "zsh", "fish"}, set()),
    ("gangrun train.py no", {"notes.txt"}, set()),
    ("gangrun train.py --n", set(), {"--nproc_per_node", "--nnodes"}),
    ("gangrun store nu", {"num-keys"}, set()),
]


def normalize(candidate):
    candidate = re.sub(r"^--[\w-]+=", "", candidate.strip())
    if candidate.startswith("./") and len(candidate) > 2:
        candidate = candidate[2:]
    return candidate.rstrip("/*")


def run(argv, **kwargs):
    """subprocess.run with a timeout and text output; the caller checks the result."""
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=TIMEOUT, **kwargs)


def require_tool(test, name):
    if shutil.which(name) is None:
        test.fail(f"{name} is not installed; run scripts/install-deps (it installs zsh, fish and tmux, "
                  f"as CI does)")


class CompletionScripts(unittest.TestCase):
    """Scripts printed by the binary, and a directory to complete in."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gangrun-completion-")
        cls.scripts = {}
        for shell, name in SCRIPT_FILES.items():
            result = run([GANGRUN, "completion", shell])
            if result.returncode != 0:
                shutil.rmtree(cls.tmp, ignore_errors=True)
                raise AssertionError(f"gangrun completion {shell}: exit {result.returncode}\n{result.stderr}")
            cls.scripts[shell] = result.stdout
            os.makedirs(os.path.join(cls.tmp, "scripts", shell))
            with open(os.path.join(cls.tmp, "scripts", shell, name), "w") as f:
                f.write(result.stdout)
        cls.work = os.path.join(cls.tmp, "work")
        os.makedirs(os.path.join(cls.work, "subdir"))
        for name in ("notes.txt", "train.py"):
            with open(os.path.join(cls.work, name), "w") as f:
                f.write("\n")
        cls.home = os.path.join(cls.tmp, "home")
        os.mkdir(cls.home)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def script_path(self, shell):
        return os.path.join(self.tmp, "scripts", shell, SCRIPT_FILES[shell])

    def shell_env(self, **extra):
        env = {"HOME": self.home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
               "XDG_DATA_HOME": os.path.join(self.home, ".local", "share")}
        env.update(extra)
        return env

    def check_cases(self, shell, complete):
        """Runs COMPLETE(line) -> [candidates] for every case and checks what it offers."""
        for line, offered, never in CASES:
            with self.subTest(shell=shell, line=line):
                raw = complete(line)
                got = {normalize(c) for c in raw}
                missing = offered - got
                self.assertFalse(missing, f"{shell}: {line!r} does not offer {sorted(missing)}; it offers {raw[:40]}")
                wrong = never & got
                self.assertFalse(wrong, f"{shell}: {line!r} offers {sorted(wrong)}; it offers {raw[:40]}")


class CheckedIn(CompletionScripts):
    def test_checked_in_scripts_are_what_the_binary_prints(self):
        for shell, name in SCRIPT_FILES.items():
            with self.subTest(shell=shell):
                path = os.path.join(COMPLETIONS_DIR, name)
                self.assertTrue(os.path.isfile(path), f"{path} is missing; run scripts/update-completions {GANGRUN}")
                with open(path) as f:
                    checked_in = f.read()
                self.assertTrue(checked_in == self.scripts[shell],
                                f"completions/{name} differs from `gangrun completion {shell}`; "
                                f"run scripts/update-completions {GANGRUN}")

    def test_update_script_writes_the_same(self):
        out = os.path.join(self.tmp, "regenerated")
        result = run([os.path.join(REPO, "scripts", "update-completions"), GANGRUN, out])
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        for shell, name in SCRIPT_FILES.items():
            with open(os.path.join(out, name)) as f:
                self.assertTrue(f.read() == self.scripts[shell], f"update-completions wrote another {name}")

    def test_every_subcommand_has_help(self):
        for sub in ("completion", "devices", "preflight", "store"):
            with self.subTest(subcommand=sub):
                result = run([GANGRUN, sub, "--help"])
                self.assertEqual(result.returncode, 0, result.stdout[:300] + result.stderr)
                self.assertIn(f"gangrun {sub}", result.stdout)

    def test_bad_shell_is_a_usage_error_naming_the_shells(self):
        for args in (["tcsh"], [], ["bash", "extra"]):
            with self.subTest(args=args):
                result = run([GANGRUN, "completion", *args])
                self.assertEqual(result.returncode, 2, result.stdout[:300] + result.stderr)
                self.assertEqual(result.stdout, "")
                for shell in SCRIPT_FILES:
                    self.assertIn(shell, result.stderr)

    def test_help_lists_the_subcommand(self):
        result = run([GANGRUN, "--help"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("gangrun completion bash|zsh|fish", result.stdout)


class Bash(CompletionScripts):
    def test_bash(self):
        self.assertTrue(os.path.isfile(BASH_COMPLETION),
                        f"{BASH_COMPLETION} is missing; run scripts/install-deps (package bash-completion)")
        self.check_cases("bash", self.complete)

    def complete(self, line):
        words = []
        for word in line.split(" "):
            # readline breaks words at '=' too (COMP_WORDBREAKS)
            left, eq, right = word.partition("=")
            words += [left, eq] + ([right] if right else []) if eq else [word]
        program = "\n".join([
            f"source {shlex.quote(BASH_COMPLETION)}",
            f"source {shlex.quote(self.script_path('bash'))}",
            "spec=$(complete -p gangrun) || exit 3",
            "fn=${spec##*-F }; fn=${fn%% *}",
            "COMP_WORDS=(" + " ".join(shlex.quote(w) for w in words) + ")",
            f"COMP_CWORD={len(words) - 1}",
            f"COMP_LINE={shlex.quote(line)}",
            "COMP_POINT=${#COMP_LINE}",
            'COMPREPLY=()',
            '"$fn" gangrun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"',
            'printf "%s\\n" "${COMPREPLY[@]}"',
        ])
        result = run(["bash", "--norc", "--noprofile", "-c", program], cwd=self.work, env=self.shell_env())
        self.assertEqual(result.returncode, 0, f"bash failed for {line!r}:\n{result.stderr}")
        return [c for c in result.stdout.split("\n") if c]


class Fish(CompletionScripts):
    def test_fish(self):
        require_tool(self, "fish")
        self.check_cases("fish", self.complete)

    def complete(self, line):
        result = run(["fish", "--no-config", "-c", 'source $GANGRUN_SCRIPT; complete -C "$GANGRUN_LINE"'],
                     cwd=self.work,
                     env=self.shell_env(GANGRUN_SCRIPT=self.script_path("fish"), GANGRUN_LINE=line))
        self.assertEqual(result.returncode, 0, f"fish failed for {line!r}:\n{result.stderr}")
        return [c.split("\t")[0] for c in result.stdout.split("\n") if c]


class TmuxServerGone(Exception):
    """tmux answered that its server went away: tmux's own start-up and shutdown races
    (seen as "server exited unexpectedly" on busy machines), not a completion failure."""


# What a tmux client prints when the server it talked to is not (or no longer) there.
TMUX_SERVER_GONE = ("server exited unexpectedly", "lost server", "no server running", "error connecting to")
TMUX_ATTEMPTS = 3  # a case whose tmux server went away is redone on a new server, this often at most


class Zsh(CompletionScripts):
    def test_zsh(self):
        require_tool(self, "zsh")
        require_tool(self, "tmux")
        self.zdotdir = os.path.join(self.tmp, "zdotdir")
        os.makedirs(self.zdotdir, exist_ok=True)
        with open(os.path.join(self.zdotdir, ".zshenv"), "w") as f:
            f.write("setopt no_global_rcs\n")
        with open(os.path.join(self.zdotdir, ".zshrc"), "w") as f:
            f.write(f"""PS1={shlex.quote(ZSH_PROMPT)}
RPS1=
fpath=({shlex.quote(os.path.dirname(self.script_path('zsh')))} $fpath)
autoload -Uz compinit && compinit -u -D
unsetopt list_ambiguous  # list the matches on the first Tab
zstyle ':completion:*' list-prompt ''
LISTMAX=0
# Tab completes and draws the line and the listing now (zle -R writes and flushes
# both before it returns); then it sets the pane title, which tmux can only see
# after it has read everything written before, and touches a file.
_gangrun_test_complete() {{
  zle complete-word
  zle -R
  print -n "\\e]2;$ZSHTEST_TITLE\\a"
  print -n >$ZSHTEST_DONE
}}
zle -N _gangrun_test_complete
bindkey '^I' _gangrun_test_complete
cd {shlex.quote(self.work)}
""")
        # The server outlives its sessions (exit-empty off): a case that kills the last
        # session must not race the next case's new-session against a server that exits.
        self.tmux_conf = os.path.join(self.tmp, "tmux.conf")
        with open(self.tmux_conf, "w") as f:
            f.write("set -s exit-empty off\n")
        self.socket = None
        try:
            self.start_tmux_server()
            self.check_cases("zsh", self.complete)
        finally:
            self.stop_tmux_server()

    def tmux_env(self):
        # The socket lives in the temporary directory, so nothing is left in /tmp/tmux-UID.
        return {**os.environ, "TMUX_TMPDIR": self.tmp}

    def tmux(self, *args):
        result = run(["tmux", "-L", self.socket, "-f", self.tmux_conf, *args], env=self.tmux_env())
        if result.returncode != 0 and any(s in result.stderr for s in TMUX_SERVER_GONE):
            raise TmuxServerGone(f"tmux {' '.join(args[:1])}: {result.stderr.strip()}")
        self.assertEqual(result.returncode, 0, f"tmux {' '.join(args)}: {result.stderr}")
        return result.stdout

    def start_tmux_server(self):
        """A server of our own on a new socket; tmux's start-up races are retried."""
        problems = []
        for _ in range(TMUX_ATTEMPTS):
            self.stop_tmux_server()
            self.socket = f"gangrun-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                self.tmux("start-server")
                self.tmux("list-sessions")  # answers only once the server runs
                return
            except TmuxServerGone as gone:
                problems.append(str(gone))
        self.fail(f"tmux: no server after {TMUX_ATTEMPTS} attempts: {problems}")

    def stop_tmux_server(self):
        # Our own server only; a missing one (nothing started) is fine.
        if self.socket:
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=TIMEOUT, env=self.tmux_env())
            self.socket = None

    def pane(self, session):
        return self.tmux("capture-pane", "-p", "-t", session)

    def wait_for(self, predicate, what, timeout=60):
        # Polls for an event; the timeout only ends a hung shell.
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"zsh: timed out after {timeout}s waiting for {what}")
            time.sleep(0.02)

    def complete(self, line):
        problems = []
        for _ in range(TMUX_ATTEMPTS):
            try:
                return self.complete_once(line)
            except TmuxServerGone as gone:
                problems.append(str(gone))
                self.start_tmux_server()
        self.fail(f"zsh: tmux lost its server {TMUX_ATTEMPTS} times completing {line!r}: {problems}")

    def complete_once(self, line):
        session = f"case{uuid.uuid4().hex[:8]}"
        done = os.path.join(self.tmp, f"{session}.done")
        title = f"completed-{session}"
        self.tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", "--",
                  "env", "-i", *[f"{k}={v}" for k, v in self.shell_env(
                      ZDOTDIR=self.zdotdir, TERM="screen", ZSHTEST_DONE=done, ZSHTEST_TITLE=title).items()],
                  "zsh", "-i")
        try:
            self.wait_for(lambda: ZSH_PROMPT.strip() in self.pane(session), "the prompt")
            self.tmux("send-keys", "-t", session, "-l", line)
            self.tmux("send-keys", "-t", session, "Tab")
            self.wait_for(lambda: os.path.exists(done), f"completion of {line!r}")
            # The title is set after the listing was written: once tmux shows it, the
            # pane holds the whole listing.
            self.wait_for(lambda: self.tmux("display-message", "-p", "-t", session, "#{pane_title}").strip() == title,
                          f"tmux to show what zsh wrote for {line!r}")
            text = self.pane(session)
        finally:
            self.tmux("kill-session", "-t", session)
        lines = text.rstrip("\n").split("\n")
        prompt_at = max(i for i, l in enumerate(lines) if l.startswith(ZSH_PROMPT.strip()))
        edited = lines[prompt_at][len(ZSH_PROMPT):].split()
        listed = [word for l in lines[prompt_at + 1:] for word in l.split()]
        # The word under the cursor as completion left it, and everything listed.
        return edited[-1:] + listed


if __name__ == "__main__":
    if not (os.path.isfile(GANGRUN) and os.access(GANGRUN, os.X_OK)):
        print(f"SKIP: GANGRUN_BIN is not an executable file: {GANGRUN}", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
