// The run directory: per-attempt, per-worker folders for log files and
// error files. With --log_dir a new DIR/<run_id>_<unique> for every run (as
// torchrun makes them), so a second run never touches the first one's logs;
// else a private temporary folder that is removed when the run ends. The run
// id is only part of a name, never a path: see run_dir_prefix().
//
// This file alone spells the layout; everyone else asks it:
//   RUN_DIR/attempt_<n>/                  an attempt (attempt_path)
//   RUN_DIR/attempt_<n>/<local_rank>/     a worker's files (worker_path)
//     stdout.log, stderr.log              its output with --log_dir (log_file)
//     error.json                          torch's TORCHELASTIC_ERROR_FILE (error_file)
//   RUN_DIR/report.json, report.html      the run's report and its picture (report_file)
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

// "<run_id>_" with every byte outside [A-Za-z0-9._-] replaced by '_', a
// leading '.' too, and at most 64 bytes of the id kept: the run id comes from
// the user (--rdzv_id), and "../x" or "a/b" must not reach outside the parent.
std::string run_dir_prefix(const std::string& run_id);

class RunDirectory {
 public:
  // Creates log_dir (and parents) if given and a new run_dir_prefix()XXXXXX
  // inside it, else gangrun-run_dir_prefix()XXXXXX under tmp_root.
  static Expected<RunDirectory> create(const std::optional<std::string>& log_dir,
                                       const std::string& tmp_root, const std::string& run_id);
  // The pattern create() fills in, XXXXXX still in it (--dry-run shows it).
  static std::string planned_path(const std::optional<std::string>& log_dir,
                                  const std::string& tmp_root, const std::string& run_id);

  // The layout under a run directory's path (see the top of this file).
  static std::string attempt_path(const std::string& run_dir, int attempt);
  static std::string worker_path(const std::string& run_dir, int attempt, int local_rank);
  static std::string log_file(const std::string& worker_path, bool stderr_stream);
  static std::string error_file(const std::string& run_dir, int attempt, int local_rank);
  // RUN_DIR/report.json (page false) or RUN_DIR/report.html (page true).
  static std::string report_file(const std::string& run_dir, bool page);

  RunDirectory(RunDirectory&& other) noexcept;
  RunDirectory& operator=(RunDirectory&&) = delete;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory();  // removes a temporary directory with everything in it

  const std::string& path() const { return path_; }
  bool temporary() const { return temporary_; }
  std::string attempt_path(int attempt) const { return attempt_path(path_, attempt); }

  // Creates attempt_<n>/<local_rank>/ for every local rank (deleting what a
  // previous use of the same attempt number left, which in a directory of
  // this run's own cannot be another run's).
  Expected<void> prepare_attempt(int attempt, int local_world_size) const;

 private:
  RunDirectory(std::string path, bool temporary) : path_(std::move(path)), temporary_(temporary) {}
  std::string path_;
  bool temporary_ = false;
};

}  // namespace gangrun::launch
