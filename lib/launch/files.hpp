// The run directory: per-attempt, per-worker folders for log files and
// error files. DIR/<run_id> with --log_dir, else a private temporary folder
// that is removed when the run ends.
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

class RunDirectory {
 public:
  // Creates log_dir (and parents) if given, else mkdtemp under tmp_root.
  static Expected<RunDirectory> create(const std::optional<std::string>& log_dir,
                                       const std::string& tmp_root, const std::string& run_id);
  RunDirectory(RunDirectory&& other) noexcept;
  RunDirectory& operator=(RunDirectory&&) = delete;
  RunDirectory(const RunDirectory&) = delete;
  ~RunDirectory();  // removes a temporary directory with everything in it

  const std::string& path() const { return path_; }
  bool temporary() const { return temporary_; }

  // Deletes and recreates attempt_<n>/<local_rank>/ for every local rank, as
  // torchrun does when it starts an attempt.
  Expected<void> prepare_attempt(int attempt, int local_world_size) const;

 private:
  RunDirectory(std::string path, bool temporary) : path_(std::move(path)), temporary_(temporary) {}
  std::string path_;
  bool temporary_ = false;
};

}  // namespace gangrun::launch
