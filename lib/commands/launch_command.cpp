#include "commands/launch_command.hpp"

#include "agent/node_agent.hpp"
#include "commands/preflight_command.hpp"
#include "launch/dialects/accelerate.hpp"
#include "launch/dialects/omp_threads.hpp"
#include "launch/dry_run.hpp"
#include "launch/node_devices.hpp"
#include "launch/plan.hpp"
#include "launch/plan_checks.hpp"
#include "logging/logging.hpp"
#include "remote/remote_start.hpp"
#include "report/run_report.hpp"
#include "util/exit_codes.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

namespace gangrun::commands {
namespace {

// The devices of this node the options ask for; nullopt when they ask for none.
Expected<std::optional<launch::NodeDevices>> devices_for(const config::Options& options,
                                                         const EnvMap& env) {
  if (!launch::launch_needs_devices(options)) {
    if (auto warning = launch::unprobed_cuda_warning(env)) spdlog::warn("{}", *warning);
    return std::nullopt;
  }
  launch::NodeProbes probes = launch::probe_node(options, env, launch::ProbeScope::needed);
  GANGRUN_TRY_ASSIGN(found, launch::node_devices(options, env, probes));
  if (found->view) {
    for (const std::string& note : found->view->notes) spdlog::warn("{}", note);
  }
  if (found->why_none)
    spdlog::debug("no {} device: {}", accel::to_string(found->kind), *found->why_none);
  return std::optional<launch::NodeDevices>(std::move(*found));
}

void print_dry_run(const launch::LaunchPlan& plan, const config::Options& options) {
  if (options.json) {
    std::cout << report::json_text(launch::plan_to_json(plan)) << '\n';
  } else {
    std::cout << launch::plan_to_text(plan, options.verbosity > 0);
  }
}

}  // namespace

[[noreturn]] void die_by_signal(int signal_number) {
  std::fflush(stdout);
  std::signal(signal_number, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signal_number);
  // A signal whose default action does not terminate: end with its code.
  std::_Exit(exit_codes::for_signal(signal_number));
}

Expected<int> run_launch_command(const config::LaunchRequest& request, const EnvMap& env) {
  const config::Options& options = request.options;
  logging::setup_logging(options.verbosity, options.color);
  // A job gangrun starts on other nodes itself (remote/remote_start.hpp).
  GANGRUN_TRY_ASSIGN(remote_code,
                     remote::start_remotely(options, request.arguments, env, std::cout));
  if (*remote_code) return **remote_code;
  if (options.preflight && !options.dry_run) {
    GANGRUN_TRY_ASSIGN(checked, preflight_before_launch(options, env));
    if (*checked != exit_codes::k_success) return *checked;
  }
  GANGRUN_TRY_ASSIGN(devices, devices_for(options, env));
  GANGRUN_TRY_ASSIGN(plan, launch::make_plan(options, env, std::move(*devices)));
  // A dry run checks them too: it says whether this launch would start.
  GANGRUN_TRY(launch::check_output_paths(*plan));
  GANGRUN_TRY(launch::check_store_host_resolves(*plan));
  if (options.dry_run) {
    print_dry_run(*plan, options);
    return exit_codes::k_success;
  }
  if (auto mode = launch::accelerate_mode_message(plan->dialects.accelerate, plan->devices,
                                                  plan->local_world_size, plan->nnodes)) {
    spdlog::info("{}", *mode);
  }
  if (auto threads = launch::omp_threads_message(*plan)) spdlog::info("{}", *threads);
  agent::RunResult result = agent::run(*plan);
  if (result.die_by_signal) die_by_signal(*result.die_by_signal);
  return result.exit_code;
}

}  // namespace gangrun::commands
