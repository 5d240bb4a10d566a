// The run's report in its own directory (--log-dir): report.json, the same
// document as --report, and report.html, its picture (report/report_html.hpp).
// The agent writes both when a run ends; `gangrun report RUN_DIR` draws the
// page again from the report.json found there. The one place that puts
// these files in a run directory.
#pragma once

#include "report/timeline.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gangrun::launch {

// What each worker's log files in run_dir say of its output: when they were
// last written (their modification time) and their size, for the workers
// the report names. A file that is not there is no output.
std::vector<report::LogActivity> log_activity(const std::string& run_dir,
                                              const nlohmann::json& report);

// Writes run_dir/report.json and run_dir/report.html, each whole or not at all.
Expected<void> write_run_report(const std::string& run_dir, const nlohmann::json& report);

// Draws run_dir/report.html again from run_dir/report.json; its path.
// Errors (usage): run_dir is no directory, or has no report.json (a run
// without --log-dir keeps none, a run still going has none yet), or its
// report.json is no run report; (io) the page cannot be written.
Expected<std::string> refresh_report_page(const std::string& run_dir);

}  // namespace gangrun::launch
