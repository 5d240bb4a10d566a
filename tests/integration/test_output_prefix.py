"""Console output modes (docs/supervision.md, "Output"): prefix (default with >1 worker), templates,
inherit (default with one worker), streams kept apart, unterminated fragments."""

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


if __name__ == "__main__":
    harness.main()
