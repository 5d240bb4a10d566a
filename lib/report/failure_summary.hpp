// The human-readable failure report: the root cause first, then one line per
// other worker.
#pragma once

#include "report/error_file.hpp"
#include "report/run_record.hpp"

#include <optional>
#include <string>

namespace gangrun::report {

// attempt must have a root cause. root_error is what the root cause wrote to
// its error file, if anything (its WorkerRecord::error). Returns text ending
// in '\n'. Other workers are described by describe_worker_end
// (worker_end.hpp); incomplete log files are listed last.
std::string format_failure(const RunRecord& run, const AttemptRecord& attempt,
                           const std::optional<WorkerError>& root_error);

// "some log files are incomplete (a write failed): a, b", or nullopt when
// every log file of the attempt is whole. Printed on success too.
std::optional<std::string> incomplete_logs_note(const AttemptRecord& attempt);

}  // namespace gangrun::report
