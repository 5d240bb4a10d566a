// `gangrun devices [--json] [OPTIONS]`: every backend's devices as the
// vendor runtime numbers them, the variables that shaped each list, and the
// mask every worker of a launch with the same options would get.
#pragma once

#include "config/cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// Sets up logging from the options, prints to stdout, and returns the exit
// code: 0, or 2 when an inherited visibility variable or the launch options
// are malformed or contradictory (the report is still printed, with the
// error in it). A missing driver is "no devices" with the reason, never an
// error.
Expected<int> run_devices_command(const config::DevicesRequest& request, const EnvMap& env);

}  // namespace gangrun::commands
