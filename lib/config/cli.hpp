// The command line: which subcommand (config/command_table.hpp), and its
// options. With store_cli.cpp, the only user of CLI11.
#pragma once

#include "config/command_table.hpp"
#include "config/options.hpp"
#include "config/store_cli.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gangrun::config {

// gangrun [OPTIONS] PROGRAM [ARGS...]
struct LaunchRequest {
  Options options;
  // argv without argv[0]: what gangrun runs again on every node when it
  // starts itself through srun.
  std::vector<std::string> arguments;
};

// gangrun devices [OPTIONS]: the launch options, no program.
struct DevicesRequest {
  Options options;
};

// gangrun preflight [OPTIONS]: the launch options, no program; arguments as
// for a launch, for the nodes gangrun starts itself on.
struct PreflightRequest {
  Options options;
  std::vector<std::string> arguments;
};

// gangrun stacks [--run-id ID | --pid PID | --log-dir DIR] [--native]
// [--json] [--stack-tool PATH]: which running job, and how to print it.
struct StacksRequest {
  std::optional<std::string> run_id;
  std::optional<long> pid;
  std::optional<std::string> log_dir;
  bool native = false;  // C and C++ frames too
  bool json = false;
  std::optional<std::string> stack_tool;
};

// gangrun top [--run-id ID | --pid PID | --log-dir DIR] [--once] [--json]:
// the job is chosen as for stacks (its fields of `job` only).
struct TopRequest {
  StacksRequest job;
  bool once = false;  // one frame, then exit
  bool json = false;  // one snapshot of every node as JSON, then exit
};

// gangrun report RUN_DIR [RUN_DIR ...] [-o FILE]: draw the run's report.html
// again, or with several run directories (one per node of a job) one page
// of every node.
struct ReportRequest {
  std::vector<std::string> run_dirs;  // at least one
  std::optional<std::string> output;  // --output FILE, -o FILE
};

// gangrun store ACTION ... (never StoreAction::help: that is a TextOutput).
struct StoreRequest {
  StoreCommand store;
};

// gangrun completion SHELL
struct CompletionRequest {
  Shell shell;
};

// Which --help was asked for; cli_docs/help_text.hpp writes each.
enum class HelpTopic { launch, devices, preflight, completion };

struct HelpRequest {
  HelpTopic topic;
};

// gangrun --version
struct VersionRequest {};

// Text to print as is: the help of `gangrun store` and its actions, which
// the store's parser writes itself.
struct TextOutput {
  std::string text;
};

// What the command line asked for.
using Command = std::variant<LaunchRequest, DevicesRequest, PreflightRequest, StacksRequest,
                             TopRequest, ReportRequest, StoreRequest, CompletionRequest,
                             HelpRequest, VersionRequest, TextOutput>;

// Parses argv (argv[0] is the program name) and layers every option value:
// command line > GANGRUN_<OPTION> in env > PET_<OPTION> in env > the JSON file
// named by --config (or GANGRUN_CONFIG / PET_CONFIG) > built-in defaults.
// Option names accept snake_case and dash-case. The first positional word
// and everything after it (or everything after "--") is the program and its
// arguments, passed through untouched. "gangrun devices OPTIONS" takes the
// same options and no program. "gangrun completion SHELL" (bash, zsh, fish)
// asks for that shell's completion script, "--help" or "-h" after
// "completion" for its help; any other word is a usage error naming the
// shells. Help is asked for, not written: --help gives a HelpRequest.
//
// Every problem is an ErrorCode::usage error whose message names the option
// (with the spelling the user gave, or the environment variable / config
// key) and says what is wrong and how to fix it. Pure apart from reading the
// config file; never prints, never exits.
Expected<Command> parse_command_line(int argc, const char* const* argv, const EnvMap& env);

}  // namespace gangrun::config
