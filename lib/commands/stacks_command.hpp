// gangrun stacks: every rank's stack of a job running on this host, asked
// from another terminal. The job is found in the registry its agent keeps
// (doctor/job_registry.hpp), its workers in /proc, and each worker is read
// by the stack tool at once, in parallel; the output is the gang doctor's:
// the ranks grouped, the odd ones out first, then every thread in full.
#pragma once

#include "config/cli.hpp"
#include "doctor/job_registry.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// The job that --run-id, --pid or --log-dir names among those running
// here, or the only one; errors begin with `command` ("stacks", "top").
Expected<doctor::RegisteredJob> choose_job(const std::vector<doctor::RegisteredJob>& jobs,
                                           const config::StacksRequest& request,
                                           const std::string& command = "stacks");

Expected<int> run_stacks_command(const config::StacksRequest& request, const EnvMap& env);

}  // namespace gangrun::commands
