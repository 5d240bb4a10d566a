// `gangrun completion bash|zsh|fish`: shell completion scripts generated from
// the option and command tables (config/option_table.hpp,
// config/command_table.hpp), so an option, subcommand or store action added
// there is completed in every shell. The scripts are plain text with no call
// back into gangrun; the generated files are checked in under completions/
// (scripts/update-completions).
#pragma once

#include "config/command_table.hpp"

#include <string>

namespace gangrun::cli_docs {

// The whole script for SHELL. Each completes: the subcommands as the first
// word; every launch option in each long spelling (snake_case, dash-case,
// aliases) and its short name; option values from choices, suggestions and
// value hints; then the program (Python files and commands) and, after it,
// the shell's default file completion for the program's own arguments; the
// actions and options of `gangrun store`; the shells of `gangrun completion`.
std::string completion_script(config::Shell shell);

}  // namespace gangrun::cli_docs
