#include "commands/report_command.hpp"

#include "launch/run_report_files.hpp"

#include <cstdio>

namespace gangrun::commands {

Expected<int> run_report_command(const config::ReportRequest& request) {
  auto page = request.run_dirs.size() == 1
                  ? launch::refresh_report_page(request.run_dirs.front(), request.output)
                  : launch::write_job_report_page(request.run_dirs, request.output);
  if (!page) return tl::unexpected(page.error());
  std::fputs((*page + "\n").c_str(), stdout);
  return 0;
}

}  // namespace gangrun::commands
