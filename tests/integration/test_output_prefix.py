"""Console output modes (docs/supervision.md, "Output"): prefix (default with >1 worker), templates,
inherit (default with one worker), streams kept apart, unterminated fragments."""

import glob
import os
import socket

import harness
from harness import GangrunTestCase, prefixed_lines

PAD = "x" * 32


def worker_lines(rank, count):
    return [f"rank={rank} line={i} {PAD}" for i in range(count)]


class PrefixMode(GangrunTestCase):
    def test_default_prefix_with_two_workers_keeps_streams_apart(self):
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--lines", 5, "--stream", "err", "--lines", 3)])
        self.assertExit(result, 0)
        for rank in (0, 1):
            self.assertEqual(prefixed_lines(result.stdout, rank), worker_lines(rank, 5), f"stdout of rank {rank}")
            self.assertEqual(prefixed_lines(result.stderr, rank), worker_lines(rank, 3), f"stderr of rank {rank}")
        stray = [line for line in result.stdout.splitlines() if not line.startswith("[rank")]
        self.assertEqual(stray, [], "stdout should carry only the workers' prefixed lines")

    def test_explicit_prefix_with_one_worker(self):
        result = self.gangrun(["--output", "prefix", *self.fake("--lines", 2)])
        self.assertExit(result, 0)
        self.assertEqual(prefixed_lines(result.stdout, 0), worker_lines(0, 2))

    def test_unterminated_fragment_is_flushed_when_the_worker_exits(self):
        result = self.gangrun(["--nproc_per_node", 2, *self.fake(
            "--only-rank", 1, "--write", "partial-without-newline", "--exit", 0)])
        self.assertExit(result, 0)
        self.assertEqual(prefixed_lines(result.stdout, 1), ["partial-without-newline"], result.describe())

    def test_log_prefix_template(self):
        hosts = {socket.gethostname(), socket.gethostname().split(".")[0], socket.getfqdn()}
        template = "<${role_name}|${node_rank}|${local_rank}|${rank}|${host}> "
        for spelling in ("--log-prefix", "--log_prefix"):
            with self.subTest(spelling=spelling):
                result = self.gangrun(["--nproc_per_node", 2, "--role", "trainer", spelling, template,
                                       *self.fake("--lines", 2)])
                self.assertExit(result, 0)
                lines = sorted(result.stdout.splitlines())
                expected = [{f"<trainer|0|{r}|{r}|{h}> {text}" for h in hosts}
                            for r in (0, 1) for text in worker_lines(r, 2)]
                self.assertEqual(len(lines), len(expected), result.describe())
                for line, allowed in zip(lines, expected):
                    self.assertIn(line, allowed)

    def test_prefix_template_from_environment(self):
        env = harness.clean_env(TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="${rank}# ")
        result = self.gangrun(["--nproc_per_node", 2, *self.fake("--lines", 2)], env=env)
        self.assertExit(result, 0)
        self.assertEqual(sorted(result.stdout.splitlines()),
                         sorted(f"{r}# {text}" for r in (0, 1) for text in worker_lines(r, 2)))


class InheritMode(GangrunTestCase):
    def test_output_inherit_is_unprefixed(self):
        result = self.gangrun(["--nproc_per_node", 2, "--output", "inherit", *self.fake(
            "--lines", 4, "--stream", "err", "--lines", 2)])
        self.assertExit(result, 0)
        self.assertEqual(sorted(result.stdout.splitlines()), sorted(worker_lines(0, 4) + worker_lines(1, 4)))
        err_lines = [line for line in result.stderr.splitlines() if line.startswith("rank=")]
        self.assertEqual(sorted(err_lines), sorted(worker_lines(0, 2) + worker_lines(1, 2)))

    def test_single_worker_defaults_to_inherit(self):
        result = self.gangrun([*self.fake("--lines", 3)])
        self.assertExit(result, 0)
        self.assertEqual(result.stdout.splitlines(), worker_lines(0, 3))


class TorchTagsItsRanks(GangrunTestCase):
    """torch 2.x tags a rank's lines itself ("[rank1]: Traceback", "[rank1]:[I... ] c10d ..."):
    the console shows the tag once, as torchrun does; the log files and the failure summary
    keep torch's lines as written."""

    WORKER = os.path.join(harness.HERE, "torch_rank_tag_worker.py")
    # c10d logs each collective once the rank is known; the excepthook tags the traceback.
    TORCH_ENV = {"TORCH_CPP_LOG_LEVEL": "INFO", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}

    def setUp(self):
        super().setUp()
        self.torchrun = harness.peer_tool("torchrun")  # skips without PyTorch 2.x
        self.env = harness.clean_env(**self.TORCH_ENV)

    @staticmethod
    def traceback_of_rank1(text):
        """Rank 1's traceback lines as shown, from "Traceback" to the exception's line."""
        lines = [line for line in text.splitlines() if line.startswith("[rank1]:")]
        start = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
        end = next(i for i, line in enumerate(lines) if "RuntimeError: rank 1 fails on purpose" in line)
        return lines[start:end + 1]

    def test_a_line_torch_tagged_with_the_ranks_own_tag_is_shown_once(self):
        logs = self.path("logs")
        result = self.gangrun(["--nproc_per_node", 2, "--log_dir", logs, harness.PEER_PYTHON, self.WORKER],
                              env=self.env)
        self.assertExit(result, 1)
        for rank in (0, 1):
            self.assertNotIn(f"[rank{rank}]: [rank{rank}]:", result.stderr + result.stdout, result.describe())
        # torch's own lines, once tagged, at the left margin.
        console = result.stderr.splitlines()
        for rank in (0, 1):
            c10d = [line for line in console if line.startswith(f"[rank{rank}]:[I") and "Running collective" in line]
            self.assertTrue(c10d, f"no c10d line of rank {rank} tagged by torch" + result.describe())
        traceback = self.traceback_of_rank1(result.stderr)
        self.assertEqual(traceback[0], "[rank1]: Traceback (most recent call last):")
        # What torch printed before it knew the rank, and the plain lines, still get the prefix.
        self.assertIn("plain line from rank 1", harness.prefixed_lines(result.stdout, 1))
        self.assertTrue(any(line.startswith("[rank1]: [I") for line in console), result.describe())

        # The log file is torch's bytes as written; the summary's last lines are too.
        [stderr_log] = glob.glob(os.path.join(logs, "*", "attempt_0", "1", "stderr.log"))
        logged = harness.read_text(stderr_log)
        self.assertIn("[rank1]: Traceback (most recent call last):\n", logged)
        self.assertNotIn("[rank1]: [rank1]:", logged)
        summary = result.stderr[result.stderr.index("Root cause"):]
        self.assertIn("    [rank1]: RuntimeError: rank 1 fails on purpose\n", summary)
        self.assertNotIn("[rank1]: [rank1]:", summary)

        # torchrun (without --tee) shows the same traceback lines, tagged once by torch.
        shown_by_torchrun = harness.run_tool(
            [self.torchrun, "--standalone", "--nproc_per_node", "2", self.WORKER],
            env=self.env, check=False, cwd=self.tmp, timeout=2 * harness.EVENT_TIMEOUT)
        self.assertNotEqual(shown_by_torchrun.returncode, 0, shown_by_torchrun.stderr)
        self.assertEqual(traceback, self.traceback_of_rank1(shown_by_torchrun.stderr))


if __name__ == "__main__":
    harness.main()
