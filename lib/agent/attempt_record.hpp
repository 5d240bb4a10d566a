// What the node agent keeps of each attempt for the report and the failure
// summary.
#pragma once

#include "launch/plan.hpp"
#include "launch/run_directory.hpp"
#include "report/run_record.hpp"
#include "supervise/gang.hpp"

#include <string>
#include <vector>

namespace gangrun::agent {

// The record of an attempt. Reads the root cause's error file now, while it
// exists: a temporary run directory is deleted when gangrun ends, so its
// paths are left out of the record and what the file said is kept instead.
report::AttemptRecord to_record(const supervise::AttemptOutcome& outcome, int attempt,
                                const launch::RunDirectory& run_dir);

// The packages to ask the job's interpreter about (agent/interpreter_probe.hpp)
// when the attempt's first failure exited 1 having written no output
// gangrun captured (its streams went straight to the terminal) and ran a
// Python script: the launcher packages it imports (torch, accelerate,
// deepspeed), so that the failure report gives the interpreter hint in that
// output mode too (WorkerRecord::unimportable_module). Empty: no probe.
std::vector<std::string> packages_to_probe(const launch::LaunchPlan& plan,
                                           const report::AttemptRecord& attempt);

// Prints the failure summary of the attempt to stderr (after stdout is
// flushed) and writes gangrun's own error file when one was asked for.
void report_failure(const launch::LaunchPlan& plan, const report::RunRecord& run,
                    const report::AttemptRecord& attempt);

}  // namespace gangrun::agent
