// The --report FILE document: the whole run as JSON.
#pragma once

#include "report/run_record.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gangrun::report {

// Schema (version 1):
// {"version": 1, "run_id", "host", "entrypoint", "started_at", "ended_at",
//  "exit_code", "gangrun_signal": name|null, "restarts": attempts - 1,
//  "plan": {...},
//  "attempts": [{"attempt", "root_cause": {"rank", "local_rank"}|null,
//                "stopped_by_signal": name|null, "teardown_latency_ms": x|null,
//                "workers": [{"rank", "local_rank", "pid", "exit_code"|null,
//                             "signal": name|null, "shell_code", "started_at",
//                             "ended_at", "duration_s", "peak_rss_kib",
//                             "stopped_by_gangrun", "error_file", "spawn_error"}]}],
//  "root_cause": the last attempt's root cause worker object, with "attempt", or null}
nlohmann::json to_json(const RunRecord& run);

Expected<void> write_report(const std::string& path, const RunRecord& run);

}  // namespace gangrun::report
