// Types the layered values of accelerate launch's own flags and config file into Options
// (build_options.cpp calls it after the core options are typed).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

namespace gangrun::config {

// The one answer to "does this line speak accelerate?": one of accelerate
// launch's own flags (a row of the accelerate group, --config_file among them)
// has a value that is not the table's default. Layering asks it of the command
// line alone (whether to read accelerate's default config file, as accelerate
// launch would); type_accelerate_values asks it of every layer (whether the
// workers get accelerate's variables).
bool speaks_accelerate(const LayeredValues& values);

// Sets options.accelerate (and the core options these flags stand for); usage
// errors name the option as given. Besides a line that speaks accelerate, a
// line whose process count is --num_processes (-n), more than one per
// machine, without --nproc_per_node, a launcher mode or a config file, gets
// accelerate's variables too (AccelerateSettings::multi_process_without_mode):
// its workers are one job that accelerate's state recognises.
Expected<void> type_accelerate_values(const LayeredValues& values, Options& options);

}  // namespace gangrun::config
