// deepspeed's --save_pid: /tmp/<pid>.deepspeed holding the pid of the process
// that supervises the workers, for programs that start deepspeed and later
// want to stop it. Under deepspeed, <pid> is the `deepspeed` command's own pid
// and the file holds its launch.py child's; under gangrun both are gangrun's.
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

// deepspeed's directory for the file (launch.py's PID_FILE_BASEPATH; not $TMPDIR).
inline constexpr const char* k_pid_file_dir = "/tmp";

// The file, written for as long as the object lives. deepspeed removes it
// only when stopped by a signal and leaves it after a normal end (and then
// refuses to start again under the same pid); gangrun removes it whenever
// the run ends, and writes over a stale one.
class DeepspeedPidFile {
 public:
  // Writes dir/<pid>.deepspeed with pid. Errors (io) name the file.
  static Expected<DeepspeedPidFile> write(int pid, const std::string& dir = k_pid_file_dir);

  DeepspeedPidFile(DeepspeedPidFile&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.reset();
  }
  DeepspeedPidFile& operator=(DeepspeedPidFile&&) = delete;
  DeepspeedPidFile(const DeepspeedPidFile&) = delete;
  DeepspeedPidFile& operator=(const DeepspeedPidFile&) = delete;
  ~DeepspeedPidFile();

  const std::string& path() const { return *path_; }

 private:
  explicit DeepspeedPidFile(std::string path) : path_(std::move(path)) {}
  std::optional<std::string> path_;  // nullopt once moved from
};

}  // namespace gangrun::launch
