// Types the layered values of the deepspeed launcher's own flags into Options (build_options.cpp
// calls it after the core options are typed).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

namespace gangrun::config {

// Sets options.deepspeed (and the core options these flags stand for); usage
// errors name the option as given.
Expected<void> type_deepspeed_values(const LayeredValues& values, Options& options);

}  // namespace gangrun::config
