// report.html: a run report (run_report.hpp's JSON) as one page a browser
// shows without a network: inline CSS, the timeline as inline SVG
// (timeline_svg.hpp), the hang's and the failure's stacks in <details>, and
// no script at all (its Content-Security-Policy forbids every script and
// every fetch). Everything taken from the run passes through html_escape.
#pragma once

#include "report/job_reports.hpp"
#include "report/timeline.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gangrun::report {

std::string report_html(const nlohmann::json& report, const std::vector<LogActivity>& logs);

// Writes report_html() to path whole or not at all (write_file_atomically).
Expected<void> write_report_html(const std::string& path, const nlohmann::json& report,
                                 const std::vector<LogActivity>& logs);

// One page for a job of several nodes, from each node's report
// (job_reports.hpp): every node's facts in a table (node rank, host, exit
// code), the node ranks the plan names that no report is of, one timeline
// (job_timeline_of), the job's root cause, and each node's findings and
// workers under its name.
std::string job_report_html(const std::vector<NodeReport>& nodes);
Expected<void> write_job_report_html(const std::string& path, const std::vector<NodeReport>& nodes);

}  // namespace gangrun::report
