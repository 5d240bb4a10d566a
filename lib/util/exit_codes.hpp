// The one table of gangrun's exit codes, documented in docs/supervision.md's
// "Exit codes". Every row is exercised by tests/integration/test_exit_codes.py.
#pragma once

namespace gangrun::exit_codes {

inline constexpr int k_success = 0;  // every worker exited 0
// root-cause worker exited with N        -> N
// root-cause worker killed by signal S   -> 128 + S
// gangrun stopped by signal S            -> 128 + S
inline constexpr int k_signal_base = 128;
inline constexpr int k_usage = 2;           // usage or configuration error; nothing was started
inline constexpr int k_store = 3;           // store, rendezvous or network failure
inline constexpr int k_system_failure = 4;  // gangrun could not start or supervise the gang
inline constexpr int k_hang = 5;       // no rank made progress for --hang-timeout (--on-hang stop)
inline constexpr int k_preflight = 6;  // a check of gangrun preflight (or --preflight) failed
inline constexpr int k_not_executable = 126;  // program or interpreter not executable
inline constexpr int k_not_found = 127;       // program or interpreter not found
// k_system_failure: a system resource or call failed (out of descriptors,
// processes or memory); whatever had started was torn down.

inline constexpr int for_signal(int signal_number) { return k_signal_base + signal_number; }

}  // namespace gangrun::exit_codes
