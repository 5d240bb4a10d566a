// run(plan): the only part of gangrun with side effects. Starts the gang,
// restarts it while restarts are left, reports, and says how gangrun ends.
#pragma once

#include "launch/plan.hpp"

#include <optional>

namespace gangrun::launch {

struct RunResult {
  int exit_code = 0;                 // util/exit_codes.hpp
  std::optional<int> die_by_signal;  // gangrun was stopped by this signal: re-raise it
};

// Must be called from the main thread (the workers' death signal is tied to
// the thread that forks them). Never throws for run-time failures of the
// job; those are in the result.
RunResult run(const LaunchPlan& plan);

}  // namespace gangrun::launch
