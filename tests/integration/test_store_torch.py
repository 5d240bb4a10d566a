"""PyTorch's own TCPStore client (is_master=False; Debian's torch 1.13 or PyTorch 2.x,
whichever GANGRUN_TEST_PYTHON imports) against `gangrun store serve`, checked call by call
against what PyTorch's own servers answer to the same script in the same run: 1.13's one
server, or 2.x's default libuv server and its older one (use_libuv=False). Under 2.x the
script also drives check, append, multi_get/multi_set, the queues, barrier and list_keys
(issue: TCP store, must show 1)."""

import json
import os
import subprocess

import harness
import store_wire
from harness import GangrunTestCase, TEST_PYTHON

CLIENT = os.path.join(harness.HERE, "store_torch_client.py")

# Where PyTorch's older servers (1.13's, and 2.x's use_libuv=False) answer otherwise than
# 2.x's default libuv server, gangrun answers as the libuv server does.
OLDER_SERVER_DIFFERENCES = {
    # The older servers do not wake a waiter when compare_set stores its key.
    "wait_released_by_compare_set", "wait_released_by_compare_set_blocked_until_released",
    # The older 2.x server has no queues: it closes the connection, and so the next
    # call on that connection (check_queue) fails too.
    "queue_len_missing", "queue_push_a", "queue_push_b", "queue_push_c", "queue_len_3", "check_queue",
    "queue_pop_first", "queue_pop_nonblocking", "queue_len_1", "queue_pop_last", "queue_pop_empty_nonblocking",
    "queue_len_0", "queue_pop_released_by_push", "queue_pop_released_by_push_blocked_until_released",
    "queue_pop_empty_times_out", "queue_len_after_pop_timed_out",
}


class TorchClients(GangrunTestCase):
    def setUp(self):
        harness.require_torch()
        super().setUp()

    def client(self, *args, stderr=subprocess.PIPE):
        return subprocess.Popen([TEST_PYTHON, CLIENT, *[str(a) for a in args]], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)

    def finish_client(self, proc, what, timeout=180):
        _, err = proc.communicate(timeout=timeout)
        self.assertEqual(proc.returncode, 0, f"{what} failed:\n{err.decode(errors='replace')[-3000:]}")

    def torch_server(self, *flags):
        """PyTorch's own server (store_torch_client.py serve); returns (Popen, {port, libuv, torch})."""
        port_file = self.path(f"torch-server{''.join(flags)}.json")
        # Its log goes to a file: a pipe nobody reads could fill and stall it.
        with open(port_file + ".log", "wb") as log:
            proc = self.client("serve", port_file, *flags, stderr=log)
        self.addCleanup(store_wire.stop, proc)

        def served():
            if proc.poll() is not None:
                with open(port_file + ".log", errors="replace") as log:
                    self.fail("PyTorch's store server ended early: " + log.read())
            return os.path.exists(port_file) and self.read_json(port_file)

        return proc, harness.wait_for(served, 90, "PyTorch's store server")

    def run_scripts(self, ports, *flags):
        """Runs the script against every {name: port} at once; returns {name: results}."""
        procs = {name: self.client("script", "127.0.0.1", port, self.path(f"{name}.json"), *flags)
                 for name, port in ports.items()}
        for name, proc in procs.items():
            self.finish_client(proc, f"the script against {name}")
        return {name: self.read_json(self.path(f"{name}.json")) for name in ports}

    def concurrent_adds(self, ports, key, clients=4, count=200):
        """Per {name: port}, at the same time: CLIENTS clients add +1 or -3 to KEY COUNT
        times each; returns {name: the sum KEY holds}."""
        deltas = [1 if i % 2 == 0 else -3 for i in range(clients)]
        procs = {name: subprocess.Popen([TEST_PYTHON, CLIENT, "adders", "127.0.0.1", str(port), key, str(count),
                                         *map(str, deltas)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True)
                 for name, port in ports.items()}
        sums = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=180)
            self.assertEqual(proc.returncode, 0, f"adders against {name}:\n{err.decode(errors='replace')[-3000:]}")
            sums[name] = int(out)
        return sums

    def test_same_answers_as_pytorchs_own_servers(self):
        _, default = self.torch_server()
        ports = {"torch": default["port"]}
        if default["libuv"]:
            _, older = self.torch_server("--no-libuv")
            self.assertFalse(older["libuv"], older)
            ports["torch_without_libuv"] = older["port"]
        with store_wire.ServedStore(self) as store:
            ports["gangrun"] = store.port
            results = self.run_scripts(ports)
            sums = self.concurrent_adds({"torch": default["port"], "gangrun": store.port}, "shared")

        expected, got = results["torch"], results["gangrun"]
        older = results.get("torch_without_libuv", expected if not default["libuv"] else None)
        if default["libuv"]:
            self.compare(got, expected, "PyTorch's libuv server", allowed=set())
            self.compare(got, older, "PyTorch's server without libuv", allowed=OLDER_SERVER_DIFFERENCES)
            differing = {call for call in expected if expected[call] != older[call]}
            self.assertLessEqual(differing, OLDER_SERVER_DIFFERENCES, "PyTorch's two servers differ elsewhere")
        else:
            self.compare(got, expected, f"PyTorch {default['torch']}'s server", allowed=OLDER_SERVER_DIFFERENCES)

        # The script itself must have seen PyTorch's documented semantics.
        self.assertEqual(expected["add_negative"], -2)
        self.assertEqual(expected["counter_text"], "-2")
        self.assertEqual(expected["cas_missing_other_expected"], "expected")
        self.assertTrue(expected["cas2_stored_nothing"])
        self.assertEqual(expected["cas_mismatch"], "new")
        self.assertIn(expected["wait_timeout"], ({"raised": "RuntimeError"}, {"raised": "DistStoreError"}))
        self.assertTrue(expected["wait_released_blocked_until_released"])
        self.assertEqual(got["wait_released_by_compare_set"], None, "gangrun wakes waiters on compare_set")
        if int(default["torch"].split(".")[0]) >= 2:
            # 2.x's client has every extended call, and each one did something.
            for name in ("check", "append", "multi_get", "multi_set", "queue_push", "queue_pop", "queue_len",
                         "list_keys", "barrier"):
                self.assertIn(name, expected["has"])
            self.assertEqual(expected["check_some_missing"], False)
            self.assertEqual(expected["append_more_value"], "abcd")
            self.assertEqual(expected["multi_get"], ["z", "x", "", "x"])
            self.assertEqual([expected[f"queue_pop_{n}"] for n in ("first", "nonblocking", "last")], ["a", "b", "c"])
            self.assertEqual(expected["queue_pop_empty_nonblocking"], {"raised": "QueueEmptyError"})
            self.assertEqual(expected["queue_pop_released_by_push"], "late item")
            self.assertTrue(expected["barrier_of_two_blocked_until_released"])
            self.assertIn("m_late2", expected["list_keys"])
        self.assertEqual(sums["torch"], 2 * 200 * 1 + 2 * 200 * -3)
        self.assertEqual(sums["gangrun"], sums["torch"])

    def compare(self, got, expected, server, allowed):
        self.assertEqual(sorted(got), sorted(expected), f"gangrun's and {server}'s runs made different calls")
        for call in sorted(expected):
            if call in allowed and got[call] != expected[call]:
                continue
            with self.subTest(server=server, call=call):
                self.assertEqual(got[call], expected[call], f"{call}: gangrun's server differs from {server}\n"
                                 f"gangrun: {json.dumps(got[call])}\n{server}: {json.dumps(expected[call])}")

    def test_a_late_key_does_not_desync_a_client_whose_wait_timed_out(self):
        with store_wire.ServedStore(self) as store:
            got = self.run_scripts({"late": store.port}, "--after-timeout-late-set")["late"]
        self.assertEqual(got["get_after_late_set"], "still works")
        self.assertEqual(got["add_after_late_set"], 2)


if __name__ == "__main__":
    harness.main()
