// Layered option texts -> a validated Options: each value typed on its own
// (option_values.hpp), then the checks that involve several options (process
// counts that must agree, node rank within nnodes, -m against --no_python,
// --standalone on one node, a program to run).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::config {

// `env` is consulted only for NO_COLOR. Records Options::origins for every
// value in `values`.
Expected<Options> build_options(const LayeredValues& values,
                                std::vector<std::string> program_and_args, const EnvMap& env);

}  // namespace gangrun::config
