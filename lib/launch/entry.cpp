#include "launch/entry.hpp"

#include "config/cli.hpp"
#include "launch/devices_command.hpp"
#include "launch/dry_run.hpp"
#include "launch/logging.hpp"
#include "launch/plan.hpp"
#include "launch/plan_checks.hpp"
#include "launch/run.hpp"
#include "launch/store_command.hpp"
#include "report/run_report.hpp"
#include "util/exit_codes.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>

namespace gangrun {
namespace {

int report_error(const Error& error) {
  spdlog::error("{}", error.describe());
  return error.exit_code();
}

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

int launch_main(int argc, char** argv) {
  launch::setup_default_logging();
  EnvMap env = current_environment();
  auto command = config::parse_command_line(argc, argv, env);
  if (!command) return report_error(command.error());
  if (command->kind == config::Command::Kind::store) {
    launch::setup_logging(0, config::ColorMode::automatic);
    auto code = launch::run_store_command(command->store);
    if (!code) return report_error(code.error());
    return *code;
  }
  if (command->kind != config::Command::Kind::launch &&
      command->kind != config::Command::Kind::devices) {
    std::cout << command->text;
    if (!command->text.empty() && command->text.back() != '\n') std::cout << '\n';
    return exit_codes::k_success;
  }
  const config::Options& options = command->options;
  launch::setup_logging(options.verbosity, options.color);
  if (command->kind == config::Command::Kind::devices) {
    return launch::run_devices_command(options, env);
  }

  std::optional<launch::NodeDevices> devices;
  if (launch::launch_needs_devices(options)) {
    // Before any thread: the probes fork (accel/probe_child.hpp).
    launch::NodeProbes probes = launch::probe_node(options, env, launch::ProbeScope::needed);
    auto found = launch::node_devices(options, env, probes);
    if (!found) return report_error(found.error());
    if (found->view) {
      for (const std::string& note : found->view->notes) spdlog::warn("{}", note);
    }
    if (found->why_none) spdlog::debug("no {} device: {}", found->kind, *found->why_none);
    devices = std::move(*found);
  } else if (auto warning = launch::unprobed_cuda_warning(env)) {
    spdlog::warn("{}", *warning);
  }
  auto plan = launch::make_plan(options, env, std::move(devices));
  if (!plan) return report_error(plan.error());
  // A dry run checks them too: it says whether this launch would start.
  if (auto writable = launch::check_output_paths(*plan); !writable) {
    return report_error(writable.error());
  }
  if (options.dry_run) {
    if (options.json) {
      std::cout << report::json_text(launch::plan_to_json(*plan)) << '\n';
    } else {
      std::cout << launch::plan_to_text(*plan, options.verbosity > 0);
    }
    return exit_codes::k_success;
  }
  if (plan->local_world_size > 1 && !env.count("OMP_NUM_THREADS")) {
    spdlog::info(
        "OMP_NUM_THREADS is unset; setting it to 1 for each of the {} workers (set it "
        "yourself to tune)",
        plan->local_world_size);
  }
  launch::RunResult result = launch::run(*plan);
  if (result.die_by_signal) die_by_signal(*result.die_by_signal);
  return result.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return launch_main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gangrun: internal error: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "gangrun: internal error\n");
  }
  return exit_codes::k_system_failure;
}

}  // namespace gangrun
