// --help and --version texts, generated from the option and command tables
// (config/option_table.hpp, config/command_table.hpp).
#pragma once

#include "config/cli.hpp"

#include <cstddef>
#include <string>

namespace gangrun::cli_docs {

// The help a HelpRequest asks for, at 80 columns.
std::string help_text(config::HelpTopic topic);

// Options grouped by OptionGroup, each listed once with its short name and
// aliases; no line is longer than `width` columns (words longer than the
// help column are the only exception).
std::string help_text(std::size_t width = 80);

// gangrun devices --help: what it shows, and the options that shape it.
std::string devices_help_text(std::size_t width = 80);
// gangrun preflight --help: what it checks, its exit status, the options that shape it.
std::string preflight_help_text(std::size_t width = 80);

// gangrun completion --help: the shells, and how to try a script.
std::string completion_help_text();

// "gangrun 0.1.0"
std::string version_text();

}  // namespace gangrun::cli_docs
