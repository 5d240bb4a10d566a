"""--report on a full filesystem: gangrun names the path and the reason, and leaves no
partial report behind (a 0-byte file read as a report says nothing of the run). The
filesystem is a real one: a 64 KiB tmpfs, filled up, mounted in a private mount namespace
(needs root or user namespaces), as test_log_dir's FullLogDisk does."""

import os
import subprocess

import harness
from harness import GangrunTestCase


class ReportOnAFullDisk(GangrunTestCase):
    def test_a_report_that_does_not_fit_is_named_and_no_partial_file_is_left(self):
        disk = self.path("disk")
        listing = self.path("listing")  # the tmpfs goes with the namespace; its listing is copied out
        os.mkdir(disk)
        mount = harness.private_tmpfs_mount(self, disk, "gangrun-test-report")

        # Fill the disk (dd ends with ENOSPC), then run; list what is left on it.
        script = (f'{mount} || exit 99; disk=$1; listing=$2; shift 2; '
                  'dd if=/dev/zero of="$disk/fill" bs=4096 2>/dev/null; '
                  '"$@"; status=$?; ls -A "$disk" > "$listing" || exit 98; exit $status')
        report = os.path.join(disk, "report.json")
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", disk, listing,
                harness.GANGRUN, "--nproc_per_node", 1, "--report", report, *self.fake("--exit", 0)]
        argv = [str(a) for a in argv]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=harness.clean_env(), start_new_session=True, cwd=self.tmp)
        self._started.append(proc)
        out, err = proc.communicate(timeout=2 * harness.EVENT_TIMEOUT)
        result = harness.Result(argv, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), 0)
        self.assertNotIn(result.returncode, (98, 99), "the test's own mount or listing failed" + result.describe())

        with open(listing) as f:
            left = f.read().split()
        self.assertEqual(left, ["fill"], "a partial report (or its temporary) was left on the disk" + result.describe())
        self.assertIn(f"gangrun: error: cannot write the report {report}: No space left on device", result.stderr,
                      result.describe())
        # The workers succeeded, the report asked for did not: no success.
        self.assertExit(result, 4)


if __name__ == "__main__":
    harness.main()
