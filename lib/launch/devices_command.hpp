// `gangrun devices [--json] [OPTIONS]`: every backend's devices as the
// vendor runtime numbers them, the variables that shaped each list, and the
// mask every worker of a launch with the same options would get.
#pragma once

#include "config/options.hpp"
#include "util/env.hpp"

namespace gangrun::launch {

// Prints to stdout; returns the exit code: 0, or 2 when an inherited
// visibility variable or the launch options are malformed or contradictory
// (the report is still printed, with the error in it). A missing driver is
// "no devices" with the reason, never an error.
int run_devices_command(const config::Options& options, const EnvMap& env);

}  // namespace gangrun::launch
