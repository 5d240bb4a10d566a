// report.html: a run report (run_report.hpp's JSON) as one page a browser
// shows without a network: inline CSS, the timeline as inline SVG
// (timeline_svg.hpp), the hang's and the failure's stacks in <details>, and
// no script at all (its Content-Security-Policy forbids every script and
// every fetch). Everything taken from the run passes through html_escape.
#pragma once

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

}  // namespace gangrun::report
