// torch's file timers as a watch of the doctor (TORCHELASTIC_ENABLE_FILE_TIMER=1,
// file_timers.hpp): the workers get the pipe's name, every request is the
// rank's sign of life for the hang watch, and an expired timer is named with
// every rank's stack (through the doctor's shared StackReader) before its
// signal goes out; the report gets it as timer_expired.
#pragma once

#include "doctor/watch/file_timers.hpp"
#include "doctor/watch/stack_reader.hpp"
#include "doctor/watch/watch.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace gangrun::doctor {

class FileTimerWatch final : public Watch {
 public:
  // Makes the pipe the plan's environment names (TORCHELASTIC_TIMER_FILE;
  // a new name when none, as torchrun's agent does); nullptr, with a
  // warning, when it cannot be made. Everything given outlives the watch.
  // reading_ended: a reading still under way when the round ended is in.
  static std::unique_ptr<FileTimerWatch> open(boost::asio::io_context& io,
                                              const launch::LaunchPlan& plan, supervise::Gang& gang,
                                              StackReader& reader,
                                              std::function<void()> reading_ended);

  // When the worker running as pid last sent a request; nullopt: never.
  std::optional<std::chrono::steady_clock::time_point> last_request_from(pid_t pid) const {
    return timers_->last_request_from(pid);
  }

  EnvMap worker_env(const std::string& attempt_path) override;
  void round_started(const RoundStart& round) override;
  void round_ended() override { round_over_ = true; }
  void add_findings(report::DoctorFindings& findings) const override;

 private:
  FileTimerWatch(supervise::Gang& gang, StackReader& reader, std::function<void()> reading_ended)
      : gang_(gang), reader_(reader), reading_ended_(std::move(reading_ended)) {}
  void on_expired(const FileTimers::Expired& expired);

  supervise::Gang& gang_;
  StackReader& reader_;
  std::function<void()> reading_ended_;
  std::unique_ptr<FileTimers> timers_;
  // Per round.
  bool round_over_ = false;
  std::optional<report::TimerExpiredFinding> expired_;
};

}  // namespace gangrun::doctor
