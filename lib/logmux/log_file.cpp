#include "logmux/log_file.hpp"

#include "logmux/write_all.hpp"

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace gangrun::logmux {

Expected<LogFile> LogFile::open(const std::string& path) {
  std::error_code ignored;  // a real problem shows up as open() failing below
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fail(ErrorCode::io, "cannot open log file " + path + ": " + errno_text(errno));
  }
  return LogFile(UniqueFd(fd));
}

void LogFile::write(std::string_view bytes) {
  if (!fd_.valid() || bytes.empty()) return;
  if (write_all(fd_.get(), bytes) != 0) fd_.reset();
}

}  // namespace gangrun::logmux
