// The run's report in its own directory (--log-dir): report.json, the same
// document as --report, and report.html, its picture (report/report_html.hpp).
// The agent writes both when a run ends; `gangrun report RUN_DIR` draws the
// page again from the report.json found there. The one place that puts
// these files in a run directory.
#pragma once

#include "report/timeline.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <optional>
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

// Draws run_dir/report.html again from run_dir/report.json (to output
// instead, when given); its path. Errors (usage): run_dir is no directory,
// or has no report.json (a run without --log-dir keeps none, a run still
// going has none yet), or its report.json is no run report; output's
// directory does not exist, or output is one; (io) the page cannot be
// written.
Expected<std::string> refresh_report_page(const std::string& run_dir,
                                          const std::optional<std::string>& output = {});

// One page of a job of several nodes from each node's run directory
// (report::job_report_html), written to output, by default to
// report-<run_id>.html in the directory that holds the first run_dir; its
// path. Errors (usage): as refresh_report_page's for each run_dir and for
// output; two reports of different runs (both run ids named), two of the
// same node (the node and both directories named); a run id that cannot
// name a file when output is not given.
Expected<std::string> write_job_report_page(const std::vector<std::string>& run_dirs,
                                            const std::optional<std::string>& output = {});

}  // namespace gangrun::launch
