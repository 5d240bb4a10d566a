"""--hang-timeout and a progress bar that stopped advancing (docs/hangs.md, "What counts as
progress"): a bar redrawn with the same count, only its elapsed time changing, is not progress,
so a gang hung behind such a bar is still named and stopped. Before, every redraw reset the
silence, and a bar that kept redrawing hid the hang for good.

Real PyTorch, gloo on CPU (GANGRUN_TEST_PYTHON: Debian's torch 1.13, whose python3 has no tqdm,
so the bar is drawn by hand in tqdm's form; or 2.x, with tqdm itself, as
integration.test_hang_progress_bar.torch2), 2 ranks (progress_bar_worker.py): every rank
redraws its bar every 0.2 s; rank 1 waits for an event that never comes, rank 0 in an
all-reduce. The stack tool is the py-spy beside GANGRUN_TEST_PEER_PYTHON when there is one;
without it the hang is named all the same.

Every wait is for an event (a file a worker writes, a line in gangrun's output, gangrun's end),
each with a bound.
"""

import os
import signal

import harness
from harness import EVENT_TIMEOUT, PEER_PYTHON, TEST_PYTHON, GangrunTestCase
from test_hang_doctor import HANG_EXIT, SUMMARY_HEAD

SCRIPT = os.path.join(harness.HERE, "progress_bar_worker.py")
WORLD = 2
HANG_TIMEOUT = 5
# The bar is redrawn every 0.2 s, so a gang whose redraws are taken for progress is never
# named: this bound only keeps the test from waiting forever for it.
NAMED_WITHIN = 60
# The stalled bar's count as tqdm prints it; every rank draws it once when the bar reaches
# it and at least three times more (progress_bar_worker.REDRAWS_BEFORE_STALLED) before it hangs.
STALLED_TEXT = "| 5/10 ["


class StalledProgressBar(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()
        self.report = self.path("report.json")

    def stack_tool(self):
        path = os.path.join(os.path.dirname(PEER_PYTHON), "py-spy")
        return ["--stack-tool", path] if os.access(path, os.X_OK) else []

    def named_or_ended(self, gangrun):
        """Waits up to NAMED_WITHIN seconds for the hang summary or gangrun's end; False if
        neither came."""
        try:
            harness.wait_for(lambda: SUMMARY_HEAD in self.stderr_of(gangrun) or gangrun.poll() is not None,
                             NAMED_WITHIN, "the hang summary")
        except AssertionError:
            return False
        return True

    def test_a_bar_redrawn_without_advancing_does_not_hide_a_hang(self):
        gangrun = self.start(["--nproc-per-node", WORLD, "--hang-timeout", HANG_TIMEOUT, "--on-hang", "stop",
                              *self.stack_tool(), "--report", self.report,
                              "--python", TEST_PYTHON, SCRIPT, self.pid_dir])
        stalled = [os.path.join(self.pid_dir, f"stalled.{rank}") for rank in range(WORLD)]
        harness.wait_for(lambda: all(map(os.path.exists, stalled)) or gangrun.poll() is not None,
                         EVENT_TIMEOUT, "every rank's bar to stall")
        if gangrun.poll() is not None:
            self.fail("gangrun ended before the bars stalled" + self.finish(gangrun).describe())
        if not self.named_or_ended(gangrun):
            gangrun.send_signal(signal.SIGTERM)  # gangrun stops its workers on the way out
            self.fail(f"no hang named {NAMED_WITHIN} s after the bars stalled, with --hang-timeout "
                      f"{HANG_TIMEOUT}: the redraws of a bar that does not advance still count as progress"
                      + self.finish(gangrun).describe())
        result = self.finish(gangrun, timeout=3 * EVENT_TIMEOUT)
        self.assertExit(result, HANG_EXIT)
        self.assertIn(SUMMARY_HEAD, result.stderr, result.describe())
        self.assertGreaterEqual(result.stderr.count(STALLED_TEXT), WORLD * 4,
                                "the bars were not redrawn as the worker says" + result.describe())
        hang = self.read_json(self.report)["attempts"][-1]["hang"]
        self.assertEqual(hang["action"], "stop", hang)
        self.assertGreaterEqual(hang["silent_for_s"], HANG_TIMEOUT, hang)
        self.assert_dead(self.recorded_pids(), what="workers")


if __name__ == "__main__":
    harness.main()
