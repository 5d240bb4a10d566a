// --help and --version texts, generated from the option table.
#pragma once

#include <string>

namespace gangrun::config {

// Options grouped by OptionGroup, each listed once with its short name and
// aliases; no line is longer than `width` columns (words longer than the
// help column are the only exception).
std::string help_text(std::size_t width = 80);

// gangrun devices --help: what it shows, and the options that shape it.
std::string devices_help_text(std::size_t width = 80);

// "gangrun 0.1.0"
std::string version_text();

}  // namespace gangrun::config
