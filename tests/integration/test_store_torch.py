"""PyTorch's own TCPStore client (Debian's torch 1.13, is_master=False) against
`gangrun store serve`, checked call by call against what PyTorch's own server answers
to the same script in the same run (issue: TCP store, must show 1)."""

import os
import subprocess

import harness
import store_wire
from harness import GangrunTestCase, TEST_PYTHON

CLIENT = os.path.join(harness.HERE, "store_torch_client.py")


class TorchClients(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()

    def run_client(self, *args, timeout=120):
        result = subprocess.run([TEST_PYTHON, CLIENT, *[str(a) for a in args]], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        self.assertEqual(result.returncode, 0, f"{args[0]} failed:\n{result.stderr.decode(errors='replace')}")

    def script_results(self, port, name, *flags):
        out = self.path(name)
        self.run_client("script", "127.0.0.1", port, out, *flags)
        return self.read_json(out)

    def concurrent_adds(self, port, key, processes=4, count=200):
        procs = [subprocess.Popen([TEST_PYTHON, CLIENT, "adder", "127.0.0.1", str(port), key, str(count),
                                   str(1 if i % 2 == 0 else -3)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
                 for i in range(processes)]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, err.decode(errors="replace"))
        code = ("import sys, datetime, torch.distributed as d\n"
                "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), is_master=False)\n"
                "print(s.add(sys.argv[2], 0))\n")
        out = subprocess.run([TEST_PYTHON, "-c", code, str(port), key], capture_output=True, timeout=60, check=True)
        return int(out.stdout)

    def test_same_answers_as_pytorchs_own_server(self):
        torch_server, torch_port = store_wire.torch_store_server(self)
        try:
            expected = self.script_results(torch_port, "torch.json")
            expected_sum = self.concurrent_adds(torch_port, "shared")
        finally:
            store_wire.stop(torch_server)
        with store_wire.ServedStore(self) as store:
            got = self.script_results(store.port, "gangrun.json")
            got_sum = self.concurrent_adds(store.port, "shared")

        self.assertEqual(sorted(got), sorted(expected))
        for call in sorted(expected):
            with self.subTest(call=call):
                self.assertEqual(got[call], expected[call], f"{call}: gangrun's server differs from PyTorch's")
        # The script itself must have seen PyTorch's documented semantics.
        self.assertEqual(expected["add_negative"], -2)
        self.assertEqual(expected["counter_text"], "-2")
        self.assertEqual(expected["cas_missing_other_expected"], "expected")
        self.assertTrue(expected["cas2_stored_nothing"])
        self.assertEqual(expected["cas_mismatch"], "new")
        self.assertEqual(expected["wait_timeout"], "RuntimeError")
        self.assertEqual(expected_sum, 2 * 200 * 1 + 2 * 200 * -3)
        self.assertEqual(got_sum, expected_sum)

    def test_a_late_key_does_not_desync_a_client_whose_wait_timed_out(self):
        with store_wire.ServedStore(self) as store:
            got = self.script_results(store.port, "late.json", "--after-timeout-late-set")
        self.assertEqual(got["get_after_late_set"], "still works")
        self.assertEqual(got["add_after_late_set"], 2)


if __name__ == "__main__":
    harness.main()
