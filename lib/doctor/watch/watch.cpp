#include "doctor/watch/watch.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace gangrun::doctor {

std::chrono::steady_clock::duration steady(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

std::string seconds_text(double seconds) { return fmt::format("{:.4g} s", seconds); }

bool runs_python(const launch::LaunchPlan& plan) {
  return plan.program.interpreter.has_value() ||
         std::filesystem::path(plan.program.executable).filename().string().starts_with("python");
}

std::vector<StackTarget> live_targets(const supervise::Gang& gang) {
  std::vector<StackTarget> targets;
  for (const supervise::Gang::LiveWorker& worker : gang.live_worker_list()) {
    targets.push_back({.rank = worker.rank, .pid = worker.pid});
  }
  return targets;
}

}  // namespace gangrun::doctor
