#include "launch/run_report_files.hpp"

#include "launch/run_directory.hpp"
#include "report/json_reading.hpp"
#include "report/report_html.hpp"
#include "report/run_report.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gangrun::launch {

using nlohmann::json;

std::vector<report::LogActivity> log_activity(const std::string& run_dir, const json& report) {
  using namespace report::json_reading;
  std::vector<report::LogActivity> out;
  for (const json& attempt : array_of(report, "attempts")) {
    std::optional<int> number = int_of(attempt, "attempt");
    if (!number || *number < 0) continue;
    for (const json& worker : array_of(attempt, "workers")) {
      std::optional<int> local_rank = int_of(worker, "local_rank");
      if (!local_rank || *local_rank < 0) continue;
      report::LogActivity activity{.attempt = *number, .local_rank = *local_rank};
      std::string folder = RunDirectory::worker_path(run_dir, *number, *local_rank);
      for (bool stderr_stream : {false, true}) {
        struct stat file {};
        if (::stat(RunDirectory::log_file(folder, stderr_stream).c_str(), &file) != 0) continue;
        activity.bytes += file.st_size;
        double written = static_cast<double>(file.st_mtim.tv_sec) +
                         static_cast<double>(file.st_mtim.tv_nsec) / 1e9;
        if (file.st_size > 0 && written > activity.last_write_s) activity.last_write_s = written;
      }
      out.push_back(activity);
    }
  }
  return out;
}

Expected<void> write_run_report(const std::string& run_dir, const json& report) {
  GANGRUN_TRY(report::write_file_atomically(RunDirectory::report_file(run_dir, false),
                                            report::json_text(report) + "\n"));
  return report::write_report_html(RunDirectory::report_file(run_dir, true), report,
                                   log_activity(run_dir, report));
}

Expected<std::string> refresh_report_page(const std::string& run_dir) {
  struct stat folder {};
  bool found = ::stat(run_dir.c_str(), &folder) == 0;
  if (!found || !S_ISDIR(folder.st_mode)) {
    std::string why = found ? "not a directory" : std::strerror(errno);
    return fail(ErrorCode::usage, "report: " + run_dir + " is no run directory (" + why +
                                      "); give DIR/<run_id>_<unique> of a run with --log-dir DIR");
  }
  std::string json_path = RunDirectory::report_file(run_dir, false);
  std::ifstream in(json_path);
  if (!in) {
    return fail(ErrorCode::usage,
                "report: " + run_dir + " has no report.json (" + std::strerror(errno) +
                    "): gangrun writes it there when a run with --log-dir ends; give the "
                    "directory of a run that has ended");
  }
  std::stringstream text;
  text << in.rdbuf();
  json document = json::parse(text.str(), nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("attempts")) {
    return fail(ErrorCode::usage, "report: " + json_path +
                                      " is not a gangrun run report (no JSON object with "
                                      "\"attempts\")");
  }
  std::string page = RunDirectory::report_file(run_dir, true);
  GANGRUN_TRY(report::write_report_html(page, document, log_activity(run_dir, document)));
  return page;
}

}  // namespace gangrun::launch
