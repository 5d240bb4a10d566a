// `gangrun completion bash|zsh|fish`: shell completion scripts generated from
// the option table, so an option added there is completed in every shell.
// The scripts are plain text with no call back into gangrun; the generated
// files are checked in under completions/ (scripts/update-completions).
#pragma once

#include "config/option_table.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

enum class Shell { bash, zsh, fish };

// "bash", "zsh", "fish": the names `gangrun completion` accepts, in that order.
const std::vector<std::string_view>& shell_names();

// The shell an exact, lower-case name refers to; nullopt for any other word.
std::optional<Shell> parse_shell(std::string_view name);

// The whole script for SHELL. Each completes: the subcommands as the first
// word; every launch option in each long spelling (snake_case, dash-case,
// aliases) and its short name; option values from choices, suggestions and
// value hints; then the program (Python files and commands) and, after it,
// the shell's default file completion for the program's own arguments; the
// actions and options of `gangrun store`; the shells of `gangrun completion`.
std::string completion_script(Shell shell);

// What completion offers after `gangrun store`. store_cli.cpp keeps its
// CLI11 set-up private, so the words are listed again here;
// test_config_completion.cpp holds each one against parse_store_command, so
// the two lists cannot drift apart unnoticed.
struct StoreOptionWord {
  std::string_view name = {};     // dash-case, without "--"; snake_case is offered too
  std::string_view metavar = {};  // empty: a flag
  std::vector<std::string_view> choices = {};
  ValueHint value_hint = ValueHint::none;
  bool serve = false;  // an option of `store serve`, else a client option
  std::string_view help = {};
};
const std::vector<std::string_view>& store_action_names();
const std::vector<StoreOptionWord>& store_option_words();

}  // namespace gangrun::config
