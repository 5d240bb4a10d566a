// The one table of gangrun's exit codes: the constants the code returns, and
// `k_outcomes`, the rows docs/supervision.md's "Exit codes" and gangrun(1)'s
// EXIT STATUS show (tests/integration/test_man_page.py compares the two row
// for row). Every row is exercised by tests/integration/test_exit_codes.py.
#pragma once

#include <array>
#include <string_view>

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

// What a launch's exit code means, as the user reads it: `code` as the
// tables write it ("0", "N", "128+S"), `meaning` in plain text (no markup:
// gangrun(1) sets the option names in it in bold, docs/supervision.md puts
// them in code spans and may add links to other pages).
struct Outcome {
  std::string_view code;
  std::string_view meaning;
};

inline constexpr std::array<Outcome, 11> k_outcomes = {{
    {"0", "every worker exited 0"},
    {"N",
     "the first worker to fail exited with N (also when the root cause is a rank it waited for)"},
    {"2",
     "usage or configuration error, including an out-of-range value, a worker count beyond the "
     "process limits (2 processes per local worker: the worker and its shim), or a --report, "
     "--log_dir or TMPDIR that cannot be written; nothing was started"},
    {"3",
     "store or network failure (for example --master_port already in use: the message names the "
     "address); on many nodes: a node lost (its agent died, stopped answering heartbeats, or its "
     "network was cut), the rendezvous store lost or silent, a round that does not fit this "
     "node's own options, or nodes missing after the join timeout"},
    {"4",
     "gangrun could not start or supervise the gang: a system resource or call failed (out of "
     "descriptors, processes or memory); what had started was torn down"},
    {"5",
     "the gang hung: no rank printed a line for --hang-timeout and --on-hang is stop (or restart "
     "with no restart left); every rank's stack was read first"},
    {"6",
     "a check of gangrun preflight failed, or of --preflight before a launch, which then started "
     "nothing"},
    {"126", "the program or interpreter is not executable (the message names the path)"},
    {"127",
     "the program or interpreter was not found (the message names the path, and a missing #! "
     "interpreter)"},
    {"128+S", "the first worker to fail was killed by signal S"},
    {"128+S", "gangrun was stopped by signal S (it re-raises S after the teardown)"},
}};

namespace detail {
// Whether TEXT is CODE in decimal, for the checks below.
constexpr bool spells(std::string_view text, int code) {
  if (text.empty()) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return value == code;
}
}  // namespace detail

// The table's numbers are the constants above, in the table's order.
static_assert(detail::spells(k_outcomes[0].code, k_success));
static_assert(k_outcomes[1].code == "N");
static_assert(detail::spells(k_outcomes[2].code, k_usage));
static_assert(detail::spells(k_outcomes[3].code, k_store));
static_assert(detail::spells(k_outcomes[4].code, k_system_failure));
static_assert(detail::spells(k_outcomes[5].code, k_hang));
static_assert(detail::spells(k_outcomes[6].code, k_preflight));
static_assert(detail::spells(k_outcomes[7].code, k_not_executable));
static_assert(detail::spells(k_outcomes[8].code, k_not_found));
static_assert(k_outcomes[9].code == "128+S" && k_signal_base == 128);
static_assert(k_outcomes[10].code == "128+S");

}  // namespace gangrun::exit_codes
