// The human-readable failure report: the root cause first, then one line per
// other worker.
#pragma once

#include "report/error_file.hpp"
#include "report/run_record.hpp"

#include <optional>
#include <string>

namespace gangrun::report {

// attempt must have a root cause. root_error is what the root cause wrote to
// its error file, if anything. Returns text ending in '\n'.
std::string format_failure(const RunRecord& run, const AttemptRecord& attempt,
                           const std::optional<WorkerError>& root_error);

}  // namespace gangrun::report
