#include "launch/run_report_files.hpp"

#include "launch/run_directory.hpp"
#include "report/job_reports.hpp"
#include "report/json_reading.hpp"
#include "report/report_html.hpp"
#include "report/run_report.hpp"
#include "util/strings.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
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

namespace {

// run_dir's report.json, read as a run report. Errors (usage): as
// refresh_report_page says.
Expected<json> read_run_report(const std::string& run_dir) {
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
  return document;
}

// A name from a report, which anyone may have edited, as printable text
// for a message; long ones cut.
std::string shown(const std::string& text) {
  return strings::quoted(strings::printable(text.substr(0, 200)));
}

// Every report is of the same run, and of a node no other is of.
Expected<void> check_one_job(const std::vector<std::string>& run_dirs,
                             const std::vector<report::NodeReport>& nodes) {
  using report::json_reading::text_of;
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    std::string first_id = text_of(nodes[0].report, "run_id");
    std::string id = text_of(nodes[i].report, "run_id");
    if (id != first_id) {
      return fail(ErrorCode::usage, "report: " + run_dirs[0] + " is of run " + shown(first_id) +
                                        " and " + run_dirs[i] + " of run " + shown(id) +
                                        ": give the run directories of one job's nodes");
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t j = i + 1; j < nodes.size(); ++j) {
      std::optional<int> rank = report::node_rank_of(nodes[i].report);
      if (!rank || rank != report::node_rank_of(nodes[j].report)) continue;
      std::string node = text_of(nodes[i].report, "node");
      return fail(ErrorCode::usage,
                  "report: " + run_dirs[i] + " and " + run_dirs[j] + " are both of " +
                      (node.empty() ? "node " + std::to_string(*rank) : shown(node)) +
                      ": give each node's run directory once");
    }
  }
  return {};
}

// The directory that holds path: "." for a bare name, "/" for one at the root.
std::string directory_holding(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// DIR/report-<run_id>.html beside the first run directory, in the --log-dir
// DIR that every node shares when it is one filesystem.
Expected<std::string> default_job_page(const std::string& first_dir, const std::string& run_id) {
  bool fits =
      !run_id.empty() && run_id != "." && run_id != ".." && run_id.size() <= 200 &&
      std::all_of(run_id.begin(), run_id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (!fits) {
    return fail(ErrorCode::usage, "report: the run id " + shown(run_id) +
                                      " cannot name a file; give the page's path with "
                                      "--output FILE");
  }
  std::string parent = directory_holding(first_dir);
  return parent + (parent == "/" ? "" : "/") + "report-" + run_id + ".html";
}

Expected<void> check_output(const std::string& output) {
  std::string dir = directory_holding(output);
  struct stat found {};
  bool exists = ::stat(dir.c_str(), &found) == 0;
  if (!exists || !S_ISDIR(found.st_mode)) {
    std::string why = exists ? "not a directory" : std::strerror(errno);
    return fail(ErrorCode::usage, "report: --output " + output + ": its directory " + dir +
                                      " does not exist (" + why +
                                      "); create it, or name a file in a directory that does");
  }
  if (::stat(output.c_str(), &found) == 0 && S_ISDIR(found.st_mode)) {
    return fail(ErrorCode::usage, "report: --output " + output +
                                      " is a directory; name the page's file, such as " + output +
                                      "/report.html");
  }
  return {};
}

}  // namespace

Expected<std::string> refresh_report_page(const std::string& run_dir,
                                          const std::optional<std::string>& output) {
  if (output) GANGRUN_TRY(check_output(*output));
  GANGRUN_TRY_ASSIGN(document, read_run_report(run_dir));
  std::string page = output ? *output : RunDirectory::report_file(run_dir, true);
  GANGRUN_TRY(report::write_report_html(page, *document, log_activity(run_dir, *document)));
  return page;
}

Expected<std::string> write_job_report_page(const std::vector<std::string>& run_dirs,
                                            const std::optional<std::string>& output) {
  if (output) GANGRUN_TRY(check_output(*output));
  std::vector<report::NodeReport> nodes;
  for (const std::string& run_dir : run_dirs) {
    GANGRUN_TRY_ASSIGN(document, read_run_report(run_dir));
    std::vector<report::LogActivity> logs = log_activity(run_dir, *document);
    nodes.push_back({std::move(*document), std::move(logs)});
  }
  GANGRUN_TRY(check_one_job(run_dirs, nodes));
  std::string page;
  if (output) {
    page = *output;
  } else {
    GANGRUN_TRY_ASSIGN(found, default_job_page(run_dirs.front(), report::json_reading::text_of(
                                                                     nodes[0].report, "run_id")));
    page = *found;
  }
  GANGRUN_TRY(report::write_job_report_html(page, nodes));
  return page;
}

}  // namespace gangrun::launch
