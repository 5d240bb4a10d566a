// The subcommands that only print text: --help, --version, the store's own
// help, and `gangrun completion SHELL`. None of them sets up logging; each
// writes to stdout and returns exit code 0.
#pragma once

#include "config/cli.hpp"
#include "util/error.hpp"

namespace gangrun::commands {

// The help asked for (cli_docs/help_text.hpp).
Expected<int> run_help_command(const config::HelpRequest& request);

// "gangrun 0.1.0"
Expected<int> run_version_command(const config::VersionRequest& request);

// Text the parser wrote itself, as is.
Expected<int> print_text_output(const config::TextOutput& output);

// The completion script of the shell asked for (cli_docs/completion.hpp).
Expected<int> run_completion_command(const config::CompletionRequest& request);

}  // namespace gangrun::commands
