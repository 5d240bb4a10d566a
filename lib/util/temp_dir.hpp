// Where gangrun puts what it writes for a while and removes: the run
// directory without --log_dir, the job registry without XDG_RUNTIME_DIR,
// the preflight's scratch directory, torch's file-timer pipe.
//
// The rule, owned here alone: $TMPDIR when it is set and not empty, else
// /tmp. An empty TMPDIR means /tmp, as POSIX tools (mktemp, sort) read it,
// never the root directory or the working directory.
#pragma once

#include "util/env.hpp"

#include <string>

namespace gangrun {

// The temporary directory of a process whose environment is env.
std::string temp_dir(const EnvMap& env);

// How messages name where temp_dir() came from: "TMPDIR=/scratch" when the
// variable chose it, else "/tmp".
std::string temp_dir_origin(const EnvMap& env);

}  // namespace gangrun
