// gangrun's own messages: spdlog to stderr, each line marked "gangrun:".
// The only place that configures spdlog sinks.
#pragma once

#include "config/options.hpp"

namespace gangrun::launch {

// Before options are known: warnings and errors, no color.
void setup_default_logging();
// verbosity: -1 quiet (errors only), 0 info, 1 debug, 2+ trace.
void setup_logging(int verbosity, config::ColorMode color);

}  // namespace gangrun::launch
