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
  // Writes append, so two LogFiles opened on one path before either writes
  // (a worker's stdout and stderr into one file) interleave whole chunks.
  static Expected<LogFile> open(const std::string& path);

  // Writes through at once. The caller hands over whole read chunks, so this
  // is one write(2) per pipe read, never one per line. The first write error
  // (a full disk) is reported at once as a warning naming the file; the file
  // is then left as it is, a true prefix of the output, and later bytes are
  // dropped: the console and the tail still get them, and a run must not
  // stop for its log. incomplete() tells the failure summary and the report.
  void write(std::string_view bytes);
  void close() { fd_.reset(); }

  // True once a write failed: the file lacks bytes the worker wrote.
  bool incomplete() const { return incomplete_; }
  const std::string& path() const { return path_; }

 private:
  LogFile(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::string path_;
  bool incomplete_ = false;
};

}  // namespace gangrun::logmux
