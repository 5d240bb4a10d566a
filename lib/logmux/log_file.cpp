#include "logmux/log_file.hpp"

#include "logmux/write_all.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace gangrun::logmux {

Expected<LogFile> LogFile::open(const std::string& path) {
  std::error_code ignored;  // a real problem shows up as open() failing below
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  // O_APPEND: a worker's two streams may share one file (deepspeed's rank
  // logs), each through its own descriptor, and neither may write over the other.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail(ErrorCode::io, "cannot open log file " + path + ": " + errno_text(errno));
  }
  return LogFile(UniqueFd(fd), path);
}

void LogFile::write(std::string_view bytes) {
  if (!fd_.valid() || bytes.empty()) return;
  if (int error = write_all(fd_.get(), bytes); error != 0) {
    // Writing on after a gap would make the file look whole while it is
    // not; a prefix is honest, and the warning says where it ends.
    spdlog::warn("cannot write log file {}: {}; it ends here, the console still gets everything",
                 path_, errno_text(error));
    incomplete_ = true;
    fd_.reset();
  }
}

}  // namespace gangrun::logmux
