#include "launch/files.hpp"

#include "launch/plan.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace gangrun::launch {
namespace fs = std::filesystem;

namespace {

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
    auto made = make_unique_directory(*log_dir + "/" + run_dir_prefix(run_id) + "XXXXXX");
    GANGRUN_TRY_CONTEXT(made, "--log_dir " + *log_dir);
    return RunDirectory(*made, false);
  }
  GANGRUN_TRY_ASSIGN(
      made, make_unique_directory(tmp_root + "/gangrun-" + run_dir_prefix(run_id) + "XXXXXX"));
  return RunDirectory(*made, true);
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
  fs::path attempt_dir = fs::path(worker_dir(path_, attempt, 0)).parent_path();
  fs::remove_all(attempt_dir, error);
  for (int local_rank = 0; local_rank < local_world_size && !error; ++local_rank) {
    fs::create_directories(worker_dir(path_, attempt, local_rank), error);
  }
  if (error) {
    return fail(ErrorCode::io, "cannot prepare " + attempt_dir.string() + ": " + error.message());
  }
  return {};
}

}  // namespace gangrun::launch
