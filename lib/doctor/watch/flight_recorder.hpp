// NCCL's flight recorder, switched on and collected (--flight-recorder).
// PyTorch's NCCL process groups keep the last collectives of every rank in
// a ring buffer when TORCH_NCCL_TRACE_BUFFER_SIZE (TORCH_FR_BUFFER_SIZE in
// newer releases) is set, write it to TORCH_NCCL_DEBUG_INFO_TEMP_FILE
// (TORCH_FR_DUMP_TEMP_FILE) + <rank> when their watchdog times out
// (TORCH_NCCL_DUMP_ON_TIMEOUT), and, when TORCH_NCCL_DEBUG_INFO_PIPE_FILE
// is set, also when a byte is written to the named pipe <that> + <rank> +
// ".pipe" each rank makes. gangrun points all of them into the attempt's
// directory, asks for a dump through the pipes when the gang hangs (before
// it stops anything), and lists the dumps in the report. Variables the
// user set are left as they are. Releases before the pipe (PyTorch 2.2)
// only dump on their own timeout; workers without NCCL ignore them all.
#pragma once

#include "doctor/watch/watch.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

// The variables every worker of a round gets; dir is made here.
EnvMap flight_recorder_env(const std::string& dir, const EnvMap& host_env);

// Writes to every rank's dump pipe in dir; how many pipes took it.
int request_flight_recorder_dumps(const std::string& dir);

// The dumps written into dir so far (one file per rank).
std::vector<std::string> flight_recorder_dumps(const std::string& dir);

// The doctor's watch of it: the round's dumps go into the round's findings,
// and a hang asks for them (hang_response.cpp) before it acts.
class FlightRecorder final : public Watch {
 public:
  explicit FlightRecorder(const EnvMap& host_env) : host_env_(host_env) {}

  // The variables for the workers of the round whose directory is
  // attempt_path; its dumps go to attempt_path/flight_recorder. Before
  // round_started.
  EnvMap worker_env(const std::string& attempt_path) override;
  // Asks every rank of the round for its dump now; how many took it.
  int request_dumps() const;
  // The round's dumps written so far.
  std::vector<std::string> dumps() const;

  void round_started(const RoundStart&) override {}
  void round_ended() override {}
  void add_findings(report::DoctorFindings& findings) const override;

 private:
  const EnvMap& host_env_;
  std::optional<std::string> dir_;  // this round's
};

}  // namespace gangrun::doctor
