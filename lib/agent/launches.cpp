#include "agent/launches.hpp"

#include "launch/dialects/worker_variables.hpp"
#include "launch/run_directory.hpp"

#include <ctime>
#include <optional>
#include <string>

namespace gangrun::agent {
namespace {

logmux::StreamRoute route_for(const launch::LaunchPlan& plan, const launch::WorkerPlan& worker,
                              const std::string& prefix, bool is_err, const std::string& dir) {
  logmux::StreamRoute route;
  route.to_console = is_err ? worker.to_console.err : worker.to_console.out;
  route.console_is_err = is_err;
  route.prefix = plan.prefix_output ? prefix : "";
  if (is_err ? worker.to_file.err : worker.to_file.out) {
    route.file_path = launch::RunDirectory::log_file(dir, is_err);
  }
  return route;
}

// deepspeed's --enable_each_rank_log: both streams of the worker go to
// DIR/<the round's start, local time>_rank<R>.log, and not to the console.
void route_to_rank_log(const std::string& dir, const std::string& started, int rank,
                       logmux::StreamRoute& route) {
  route.to_console = false;
  route.file_path = dir + "/" + started + "_rank" + std::to_string(rank) + ".log";
}

// deepspeed's name for the rank logs of a run started now: YYYYmmddHHMMSS.
std::string rank_log_time() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[32];
  std::size_t length = std::strftime(text, sizeof text, "%Y%m%d%H%M%S", &local);
  return std::string(text, length);
}

// In inherit mode a stream needs a pipe only when gangrun must see it (a log
// file, a tee, hiding it from the console, or the hang watch, whose sign of
// progress is a line).
bool needs_pipe(const launch::LaunchPlan& plan, const logmux::StreamRoute& route) {
  return plan.prefix_output || route.file_path || !route.to_console ||
         plan.doctor.hang_timeout_s.has_value();
}

}  // namespace

std::vector<supervise::WorkerLaunch> make_launches(const launch::LaunchPlan& plan,
                                                   const launch::RoundAssignment& round,
                                                   const std::string& run_dir) {
  std::vector<supervise::WorkerLaunch> launches;
  const std::optional<std::string>& rank_log_dir = plan.dialects.deepspeed.each_rank_log_dir;
  const std::string started = rank_log_dir ? rank_log_time() : "";
  for (const launch::WorkerPlan& worker : plan.workers) {
    supervise::WorkerLaunch launch;
    launch.rank = round.rank_of(worker);
    launch.local_rank = worker.local_rank;
    launch.spawn.executable = plan.program.executable;
    launch.spawn.argv = worker.argv;
    launch.spawn.cpus = worker.cpus;
    launch.spawn.env = plan.host_env;
    for (auto& [name, value] : launch::worker_variables(plan, worker, round, run_dir)) {
      launch.spawn.env[name] = value;
    }
    std::string dir = launch::RunDirectory::worker_path(run_dir, round.attempt, worker.local_rank);
    std::string prefix = launch::worker_prefix(plan, worker, round);
    logmux::StreamRoute out = route_for(plan, worker, prefix, false, dir);
    logmux::StreamRoute err = route_for(plan, worker, prefix, true, dir);
    if (rank_log_dir) {
      for (logmux::StreamRoute* route : {&out, &err}) {
        route_to_rank_log(*rank_log_dir, started, launch.rank, *route);
      }
    }
    if (needs_pipe(plan, out)) launch.stdout_route = out;
    if (needs_pipe(plan, err)) launch.stderr_route = err;
    launches.push_back(std::move(launch));
  }
  return launches;
}

}  // namespace gangrun::agent
