#include "commands/entry.hpp"

#include "commands/devices_command.hpp"
#include "commands/launch_command.hpp"
#include "commands/preflight_command.hpp"
#include "commands/report_command.hpp"
#include "commands/stacks_command.hpp"
#include "commands/store_command.hpp"
#include "commands/text_commands.hpp"
#include "commands/top_command.hpp"
#include "config/cli.hpp"
#include "launch/job_secret.hpp"
#include "logging/logging.hpp"
#include "probe/probe_mode.hpp"
#include "util/exit_codes.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <variant>

namespace gangrun {
namespace {

// The handlers as one overload set, for std::visit.
template <typename... Handlers>
struct Dispatch : Handlers... {
  using Handlers::operator()...;
};
// Spelled out for compilers without C++20's deduction for aggregates (clang
// before 17, which the fuzz targets and clang-tidy use).
template <typename... Handlers>
Dispatch(Handlers...) -> Dispatch<Handlers...>;

// Each kind of Command to the one handler of its subcommand.
Expected<int> dispatch(const config::Command& command, const EnvMap& env) {
  return std::visit(
      Dispatch{
          [&](const config::LaunchRequest& request) {
            return commands::run_launch_command(request, env);
          },
          [&](const config::DevicesRequest& request) {
            return commands::run_devices_command(request, env);
          },
          [&](const config::PreflightRequest& request) {
            return commands::run_preflight_command(request, env);
          },
          [&](const config::StacksRequest& request) {
            return commands::run_stacks_command(request, env);
          },
          [&](const config::TopRequest& request) {
            return commands::run_top_command(request, env);
          },
          [](const config::ReportRequest& request) {
            return commands::run_report_command(request);
          },
          [](const config::StoreRequest& request) { return commands::run_store_command(request); },
          [](const config::CompletionRequest& request) {
            return commands::run_completion_command(request);
          },
          [](const config::HelpRequest& request) { return commands::run_help_command(request); },
          [](const config::VersionRequest& request) {
            return commands::run_version_command(request);
          },
          [](const config::TextOutput& output) { return commands::print_text_output(output); },
      },
      command);
}

int report_error(const Error& error) {
  spdlog::error("{}", error.describe());
  return error.exit_code();
}

int gangrun_main(int argc, char** argv) {
  logging::setup_default_logging();
  EnvMap env = current_environment();
  // Read once into env; from here on it is in no environment a worker of
  // this user can read (/proc/PID/environ).
  launch::erase_job_secret_from_this_process();
  Expected<config::Command> command = config::parse_command_line(argc, argv, env);
  if (!command) return report_error(command.error());
  Expected<int> code = dispatch(*command, env);
  if (!code) return report_error(code.error());
  return *code;
}

}  // namespace

int main(int argc, char** argv) {
  // gangrun re-executed to probe a device (probe/probe_runner.hpp): before
  // options, logging or anything else. It does not return.
  if (probe::is_probe_mode(argc, argv)) probe::run_probe_mode(argc, argv);
  try {
    return gangrun_main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gangrun: internal error: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "gangrun: internal error\n");
  }
  return exit_codes::k_system_failure;
}

}  // namespace gangrun
