#include "launch/files.hpp"

#include "launch/plan.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace gangrun::launch {
namespace fs = std::filesystem;

Expected<RunDirectory> RunDirectory::create(const std::optional<std::string>& log_dir,
                                            const std::string& tmp_root,
                                            const std::string& run_id) {
  if (log_dir) {
    std::error_code error;
    fs::create_directories(*log_dir, error);
    if (error) {
      return fail(ErrorCode::io, "--log_dir: cannot create " + *log_dir + ": " + error.message());
    }
    return RunDirectory(*log_dir, false);
  }
  std::string pattern = tmp_root + "/gangrun-" + run_id + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    return fail(ErrorCode::io,
                "cannot create a directory in " + tmp_root + ": " + errno_text(errno));
  }
  return RunDirectory(buffer.data(), true);
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
