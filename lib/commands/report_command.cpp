#include "commands/report_command.hpp"

#include "launch/run_report_files.hpp"

#include <cstdio>

namespace gangrun::commands {

Expected<int> run_report_command(const config::ReportRequest& request) {
  GANGRUN_TRY_ASSIGN(page, launch::refresh_report_page(request.run_dir));
  std::fputs((*page + "\n").c_str(), stdout);
  return 0;
}

}  // namespace gangrun::commands
