#include "launch/run_directory.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace gangrun::launch {
namespace fs = std::filesystem;

namespace {

// mkdtemp's pattern for a new run directory.
std::string unique_pattern(const std::optional<std::string>& log_dir, const std::string& tmp_root,
                           const std::string& run_id) {
  if (log_dir) return *log_dir + "/" + run_dir_prefix(run_id) + "XXXXXX";
  return tmp_root + "/gangrun-" + run_dir_prefix(run_id) + "XXXXXX";
}

Expected<std::string> make_unique_directory(const std::string& pattern) {
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    return fail(ErrorCode::io,
                "cannot create the run directory " + pattern + ": " + errno_text(errno));
  }
  return std::string(buffer.data());
}

}  // namespace

std::string run_dir_prefix(const std::string& run_id) {
  constexpr std::size_t k_max_id_bytes = 64;
  std::string name = run_id.substr(0, k_max_id_bytes);
  for (char& c : name) {
    bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!kept) c = '_';
  }
  if (name.empty() || name.front() == '.') name.insert(name.begin(), '_');
  return name + "_";
}

Expected<RunDirectory> RunDirectory::create(const std::optional<std::string>& log_dir,
                                            const std::string& tmp_root,
                                            const std::string& run_id) {
  if (log_dir) {
    std::error_code error;
    fs::create_directories(*log_dir, error);
    if (error) {
      return fail(ErrorCode::io, "--log_dir: cannot create " + *log_dir + ": " + error.message());
    }
    auto made = make_unique_directory(unique_pattern(log_dir, tmp_root, run_id));
    GANGRUN_TRY_CONTEXT(made, "--log_dir " + *log_dir);
    return RunDirectory(*made, false);
  }
  GANGRUN_TRY_ASSIGN(made, make_unique_directory(unique_pattern(log_dir, tmp_root, run_id)));
  return RunDirectory(*made, true);
}

std::string RunDirectory::planned_path(const std::optional<std::string>& log_dir,
                                       const std::string& tmp_root, const std::string& run_id) {
  return unique_pattern(log_dir, tmp_root, run_id);
}

std::string RunDirectory::attempt_path(const std::string& run_dir, int attempt) {
  return fmt::format("{}/attempt_{}", run_dir, attempt);
}

std::string RunDirectory::worker_path(const std::string& run_dir, int attempt, int local_rank) {
  return fmt::format("{}/{}", attempt_path(run_dir, attempt), local_rank);
}

std::string RunDirectory::log_file(const std::string& worker_path, bool stderr_stream) {
  return worker_path + (stderr_stream ? "/stderr.log" : "/stdout.log");
}

std::string RunDirectory::report_file(const std::string& run_dir, bool page) {
  return run_dir + (page ? "/report.html" : "/report.json");
}

std::string RunDirectory::error_file(const std::string& run_dir, int attempt, int local_rank) {
  return worker_path(run_dir, attempt, local_rank) + "/error.json";
}

RunDirectory::RunDirectory(RunDirectory&& other) noexcept
    : path_(std::move(other.path_)), temporary_(other.temporary_) {
  other.temporary_ = false;
}

RunDirectory::~RunDirectory() {
  if (!temporary_) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

Expected<void> RunDirectory::prepare_attempt(int attempt, int local_world_size) const {
  std::error_code error;
  fs::path attempt_dir = attempt_path(attempt);
  fs::remove_all(attempt_dir, error);
  for (int local_rank = 0; local_rank < local_world_size && !error; ++local_rank) {
    fs::create_directories(worker_path(path_, attempt, local_rank), error);
  }
  if (error) {
    return fail(ErrorCode::io, "cannot prepare " + attempt_dir.string() + ": " + error.message());
  }
  return {};
}

}  // namespace gangrun::launch
