// gangrun report RUN_DIR: a finished run's report.html drawn again from the
// report.json in its directory (launch/run_report_files.hpp), say after an
// upgrade of gangrun or for a run directory copied from another machine.
// With several RUN_DIRs, one per node of a job, one page of every node.
#pragma once

#include "config/cli.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// Prints the page's path; a directory without a report is a usage error.
Expected<int> run_report_command(const config::ReportRequest& request);

}  // namespace gangrun::commands
