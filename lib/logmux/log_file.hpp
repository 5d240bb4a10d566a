// A worker's log file: its raw output, byte for byte, without prefixes.
#pragma once

#include "util/error.hpp"
#include "util/fd.hpp"

#include <string>
#include <string_view>

namespace gangrun::logmux {

class LogFile {
 public:
  // No file: writes go nowhere.
  LogFile() = default;
  // Creates or truncates path; its parent directories are created if missing.
  static Expected<LogFile> open(const std::string& path);

  // Writes through at once. The caller hands over whole read chunks, so this
  // is one write(2) per pipe read, never one per line. After a write error
  // (a full disk) the file is left as it is and later bytes are dropped:
  // the console and the tail still get them, and a run must not stop for
  // its log.
  void write(std::string_view bytes);
  void close() { fd_.reset(); }

 private:
  explicit LogFile(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace gangrun::logmux
