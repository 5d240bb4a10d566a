#include "doctor/watch/flight_recorder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace gangrun::doctor {

namespace fs = std::filesystem;

namespace {

// The ring buffer's length: torch's own suggestion for debugging hangs.
constexpr const char* k_entries = "2000";
constexpr const char* k_dump_prefix = "rank_";
constexpr const char* k_pipe_prefix = "pipe_rank_";

}  // namespace

EnvMap flight_recorder_env(const std::string& dir, const EnvMap& host_env) {
  std::error_code ignored;
  fs::create_directories(dir, ignored);
  const std::string dumps = dir + "/" + k_dump_prefix;
  const std::string pipes = dir + "/" + k_pipe_prefix;
  EnvMap wanted = {
      {"TORCH_NCCL_TRACE_BUFFER_SIZE", k_entries}, {"TORCH_FR_BUFFER_SIZE", k_entries},
      {"TORCH_NCCL_DUMP_ON_TIMEOUT", "1"},         {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", dumps},
      {"TORCH_FR_DUMP_TEMP_FILE", dumps},          {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", pipes}};
  EnvMap env;
  for (auto& [name, value] : wanted) {
    if (!env_lookup(host_env, name)) env[name] = value;
  }
  return env;
}

int request_flight_recorder_dumps(const std::string& dir) {
  int asked = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename();
    if (!name.starts_with(k_pipe_prefix) || !name.ends_with(".pipe")) continue;
    // Non-blocking: a rank that has gone (no reader) must not hold gangrun up.
    int fd = ::open(entry.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    if (::write(fd, "1\n", 2) > 0) ++asked;
    ::close(fd);
  }
  return asked;
}

std::vector<std::string> flight_recorder_dumps(const std::string& dir) {
  std::vector<std::string> dumps;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename();
    if (name.starts_with(k_dump_prefix) && entry.is_regular_file(error)) {
      dumps.push_back(entry.path());
    }
  }
  std::sort(dumps.begin(), dumps.end());
  return dumps;
}

EnvMap FlightRecorder::worker_env(const std::string& attempt_path) {
  dir_ = attempt_path + "/flight_recorder";
  return flight_recorder_env(*dir_, host_env_);
}

int FlightRecorder::request_dumps() const {
  return dir_ ? request_flight_recorder_dumps(*dir_) : 0;
}

std::vector<std::string> FlightRecorder::dumps() const {
  return dir_ ? flight_recorder_dumps(*dir_) : std::vector<std::string>{};
}

void FlightRecorder::add_findings(report::DoctorFindings& findings) const {
  if (dir_) findings.flight_recorder_dumps = dumps();
}

}  // namespace gangrun::doctor
