// gangrun stacks: every rank's stack of a job running on this host, asked
// from another terminal. The job is found in the registry its agent keeps
// (doctor/job_registry.hpp), its workers in /proc, and each worker is read
// by the stack tool at once, in parallel; the output is the gang doctor's:
// the ranks grouped, the odd ones out first, then every thread in full.
#pragma once

#include "config/cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

Expected<int> run_stacks_command(const config::StacksRequest& request, const EnvMap& env);

}  // namespace gangrun::commands
