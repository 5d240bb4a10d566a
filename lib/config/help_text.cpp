#include "config/help_text.hpp"

#include "config/option_table.hpp"
#include "util/strings.hpp"

#include <string_view>
#include <vector>

#ifndef GANGRUN_VERSION
#define GANGRUN_VERSION "0.0.0"
#endif

namespace gangrun::config {

namespace {

constexpr std::size_t k_indent = 2;
constexpr std::size_t k_help_column = 30;

constexpr std::string_view k_intro =
    "Starts PROGRAM as a gang of worker processes with torchrun's environment, streams their "
    "output and supervises them as one: if one fails, all are stopped and the cause is "
    "reported. Everything from PROGRAM on is passed to it untouched. Long options may be "
    "written --snake_case or --dash-case, with values as '--opt V' or '--opt=V'.";

constexpr std::string_view k_layers =
    "An option not on the command line is taken from GANGRUN_<NAME>, else PET_<NAME> in the "
    "environment (NAME is the snake_case name in capitals: GANGRUN_NPROC_PER_NODE, "
    "PET_NNODES), else from the --config file, else its default. 'gangrun --dry-run -v' shows "
    "where each value came from.";

// Greedy word wrap; every line but the first starts with `indent` spaces.
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines(1);
  for (const std::string& word : strings::split(text, ' ')) {
    if (word.empty()) continue;
    std::string& line = lines.back();
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(word);
    } else {
      if (!line.empty()) line += ' ';
      line += word;
    }
  }
  return lines;
}

void append_paragraph(std::string& out, std::string_view text, std::size_t width) {
  for (const std::string& line : wrap(text, width)) out += line + "\n";
}

std::string left_column(const OptionSpec& spec) {
  std::string left(k_indent, ' ');
  if (spec.short_name != 0) left += std::string("-") + spec.short_name + ", ";
  left += display_name(spec);
  if (!spec.metavar.empty()) left += " " + std::string(spec.metavar);
  return left;
}

std::string help_column(const OptionSpec& spec) {
  std::string text(spec.help);
  if (!spec.aliases.empty()) {
    std::vector<std::string> names;
    for (std::string_view alias : spec.aliases) names.push_back("--" + std::string(alias));
    text += ". Also " + strings::join(names, ", ");
  }
  if (spec.kind == OptionKind::value && !spec.default_text.empty()) {
    text += ". Default " + std::string(spec.default_text);
  }
  return text;
}

void append_option(std::string& out, const OptionSpec& spec, std::size_t width) {
  std::string left = left_column(spec);
  std::vector<std::string> lines =
      wrap(help_column(spec), width > k_help_column + 20 ? width - k_help_column : 20);
  const std::string pad(k_help_column, ' ');
  if (left.size() + 2 > k_help_column) {
    out += left + "\n";
  } else {
    out += left + std::string(k_help_column - left.size(), ' ') + lines.front() + "\n";
    lines.erase(lines.begin());
  }
  for (const std::string& line : lines) out += pad + line + "\n";
}

}  // namespace

std::string help_text(std::size_t width) {
  std::string out =
      "Usage: gangrun [OPTIONS] [--] PROGRAM [ARGS...]\n"
      "       gangrun devices [--json] [OPTIONS]  (gangrun devices --help)\n"
      "       gangrun store serve|get|set|add|wait|check|delete|keys|num-keys ...\n"
      "                                     (gangrun store --help)\n"
      "       gangrun completion bash|zsh|fish  (prints a shell completion script)\n\n";
  append_paragraph(out, k_intro, width);
  const std::vector<OptionSpec>& table = option_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i == 0 || table[i].group != table[i - 1].group) {
      out += std::string("\n") + to_string(table[i].group) + ":\n";
    }
    append_option(out, table[i], width);
  }
  out += "\n";
  append_paragraph(out, k_layers, width);
  return out;
}

constexpr std::string_view k_devices_intro =
    "Lists the accelerators of this node as each vendor runtime numbers them (CUDA, Intel XPU "
    "through Level Zero, AMD ROCm, CPU), the visibility variables that shaped each list, and "
    "the mask every worker of a launch with the same options would get. A missing driver is "
    "shown as 'no devices' with the reason, never as an error. Takes every launch option; "
    "these matter here:";

std::string devices_help_text(std::size_t width) {
  std::string out = "Usage: gangrun devices [--json] [OPTIONS]\n\n";
  append_paragraph(out, k_devices_intro, width);
  out += "\n";
  for (const OptionSpec& spec : option_table()) {
    bool shapes_masks = spec.group == OptionGroup::devices || spec.name == "nproc_per_node" ||
                        spec.name == "num_gpus" || spec.name == "json" || spec.name == "verbose";
    if (shapes_masks) append_option(out, spec, width);
  }
  out += "\n";
  append_paragraph(out,
                   "Library paths: GANGRUN_CUDA_LIBRARY (default libcuda.so.1), "
                   "GANGRUN_LEVEL_ZERO_LIBRARY (default libze_loader.so.1), GANGRUN_SYSFS_ROOT "
                   "(default /) for the KFD topology.",
                   width);
  return out;
}

std::string version_text() { return std::string("gangrun ") + GANGRUN_VERSION; }

}  // namespace gangrun::config
