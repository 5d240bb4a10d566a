// `gangrun [OPTIONS] PROGRAM [ARGS...]`: probe the devices the options need,
// make the plan, and run it (or, with --dry-run, print it).
#pragma once

#include "config/cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// Sets up logging from the options, then validates everything (devices,
// plan, output paths) before anything starts; an Error is returned before
// any process starts or port opens. Returns the exit code of the gang's root
// cause (0 when every worker exited 0). When gangrun was stopped by a signal
// it re-raises that signal with its default action after the workers are
// gone, so a shell sees 128+S: then it does not return.
Expected<int> run_launch_command(const config::LaunchRequest& request, const EnvMap& env);

// Ends gangrun by SIGNAL_NUMBER, as the job it ran was stopped (the agent's
// RunResult::die_by_signal): its default action, unblocked, output flushed.
[[noreturn]] void die_by_signal(int signal_number);

}  // namespace gangrun::commands
