#include "probe/probe_runner.hpp"

#include "accel/report_json.hpp"
#include "probe/probe_mode.hpp"
#include "supervise/process.hpp"
#include "util/strings.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace gangrun::probe {
namespace {

// The running binary itself, even if its file was replaced or removed
// since it started.
constexpr const char* k_self = "/proc/self/exe";

// Why a finished run gave no report, or nullopt when it ended well.
std::optional<std::string> why_no_report(const std::string& name, const supervise::CapturedRun& run,
                                         std::chrono::milliseconds timeout) {
  if (!run.status)
    return "the " + name + " probe did not answer within " + strings::duration_text(timeout);
  if (run.status->kind == supervise::ExitStatus::Kind::signaled) {
    int signal_number = run.status->signal;
    return "the " + name + " probe died of signal " + std::to_string(signal_number) + " (" +
           ::strsignal(signal_number) + ")";
  }
  if (run.status->code != 0) {
    return "the " + name + " probe exited with status " + std::to_string(run.status->code) +
           " without a report";
  }
  return std::nullopt;
}

}  // namespace

accel::BackendReport probe_in_child(std::string_view probe_name, accel::DeviceKind kind,
                                    std::string_view what, const EnvMap& env_for_child,
                                    std::chrono::milliseconds timeout) {
  std::string name(what);
  auto unavailable_report = [&](std::string why) {
    accel::BackendReport report;
    report.kind = kind;
    report.unavailable = std::move(why);
    return report;
  };
  supervise::SpawnSpec spec{
      .executable = k_self,
      .argv = {"gangrun", std::string(k_probe_mode_flag), std::string(probe_name)},
      .env = env_for_child,
  };
  Expected<supervise::CapturedRun> run = supervise::run_to_completion(spec, timeout);
  if (!run) {
    return unavailable_report("the " + name + " probe could not start: " + run.error().message());
  }
  if (auto why = why_no_report(name, *run, timeout)) return unavailable_report(std::move(*why));
  Expected<accel::BackendReport> report = accel::report_from_json(run->output);
  if (!report) {
    return unavailable_report("the " + name + " probe's report: " + report.error().message());
  }
  return std::move(*report);
}

accel::BackendReport probe_cuda_in_child(const EnvMap& env_for_child,
                                         std::chrono::milliseconds timeout) {
  return probe_in_child(k_cuda_probe, accel::DeviceKind::cuda, "CUDA", env_for_child, timeout);
}

accel::BackendReport probe_level_zero_in_child(const EnvMap& env_for_child,
                                               std::chrono::milliseconds timeout) {
  return probe_in_child(k_level_zero_probe, accel::DeviceKind::xpu, "Level Zero", env_for_child,
                        timeout);
}

}  // namespace gangrun::probe
