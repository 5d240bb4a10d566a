// The --report FILE document: the whole run as JSON.
#pragma once

#include "report/run_record.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace gangrun::report {

// Schema (version 1):
// {"version": 1, "run_id", "host", "node": this node as messages name it|null,
//  "log_dir": this run's directory|null,
//  "entrypoint", "interpreter": {"path", "source", "origin"}|null,
//  "started_at", "ended_at",
//  "exit_code", "gangrun_signal": name|null, "restarts": attempts - 1,
//  "plan": {...},
//  "attempts": [{"attempt", "root_cause": {"rank", "local_rank"}|null,
//                "first_failure": {"rank", "local_rank"}|null,
//                "blame": "rank 2 never reached the collective; ..."|null,
//                "stopped_by_signal": name|null, "teardown_latency_ms": x|null,
//                "incomplete_logs": [path, ...],
//                "workers": [{"rank", "local_rank", "pid", "exit_code"|null,
//                             "signal": name|null, "shell_code", "started_at",
//                             "ended_at", "duration_s", "peak_rss_kib",
//                             "stopped_by_gangrun", "ended", "error", "error_file",
//                             "spawn_error", "hint"}]}],
//  "root_cause": the last attempt's root cause worker object, with "attempt", or null}
// "stopped_by_gangrun": gangrun had signalled the worker; "ended" says how it
// then ended ("stopped by gangrun (SIGTERM)", "exited with 2 after gangrun's
// SIGTERM", "killed by SIGKILL after --term-timeout ...", "exited with 3").
// "error": {"message", "traceback"|null, "timestamp"|null} as the worker wrote
// it to its TORCHELASTIC_ERROR_FILE (the root cause only), or null.
// "interpreter": the Python interpreter the workers ran, where it came from
// ("--python", "PYTHON_EXEC", "PATH", "#!", "program") and how, in words; null when
// gangrun does not know it. "hint": when the worker could not import torch,
// accelerate or deepspeed, what to do about the interpreter
// (report/interpreter.hpp); else null.
// "error_file": that file's path, or null when it was in a temporary run
// directory (no --log_dir), which is gone once gangrun has ended.
nlohmann::json to_json(const RunRecord& run);

// Every JSON document gangrun prints or writes goes through here. Strings in
// them come from outside (argv, the environment, workers' output, driver
// names) and need not be UTF-8, which JSON text must be: each invalid byte
// becomes U+FFFD, so the document is always valid JSON and writing it never
// throws. The byte-exact text is in the console output and the log files.
std::string json_text(const nlohmann::json& document, int indent = 2);

// Writes the report to path whole or not at all: a temporary file beside
// it, synced, then renamed over it (a path that is no regular file, such as
// /dev/stdout, is written in place). Errors (io): the path and the reason,
// "No space left on device" on a full disk; no partial file is left, and
// an earlier report at path is kept.
Expected<void> write_report(const std::string& path, const RunRecord& run);
Expected<void> write_file_atomically(const std::string& path, std::string_view text);

}  // namespace gangrun::report
