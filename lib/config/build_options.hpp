// Layered option texts -> a validated Options: each value typed on its own
// (option_values.hpp), then the checks that involve several options (process
// counts that must agree, node rank within nnodes, -m against --no_python,
// --standalone on one node, a program to run).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "config/problems.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::config {

// What the options are for: a launch needs a program; `gangrun devices`
// takes launch options to show the masks a launch would give, and no program.
enum class Purpose { launch, devices, preflight };

// `env` is consulted only for NO_COLOR. Records Options::origins for every
// value in `layers.values`, and keeps the job the layers were read in
// (Options::job). `found_before` holds the problems layering found
// (layer_values); the values it could read are still typed and their problems
// reported with those, but the checks that set options against each other
// are left out then, since a value that did not read would make them report
// a consequence rather than a mistake.
Expected<Options> build_options(const Layers& layers, std::vector<std::string> program_and_args,
                                const EnvMap& env, Purpose purpose = Purpose::launch,
                                Problems found_before = {});

}  // namespace gangrun::config
