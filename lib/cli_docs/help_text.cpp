#include "cli_docs/help_text.hpp"

#include "config/command_table.hpp"
#include "config/option_names.hpp"
#include "config/option_table.hpp"
#include "util/strings.hpp"

#include <string_view>
#include <vector>

#ifndef GANGRUN_VERSION
#define GANGRUN_VERSION "0.0.0"
#endif

namespace gangrun::cli_docs {

using namespace config;

namespace {

constexpr std::size_t k_indent = 2;
constexpr std::size_t k_help_column = 30;
// Where a subcommand's note goes when it does not fit after its usage line.
constexpr std::size_t k_note_column = 37;

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

void append_paragraph(std::string& out, std::string_view text, std::size_t width) {
  for (const std::string& line : strings::wrap(text, width)) out += line + "\n";
}

// "       gangrun devices [--json] [OPTIONS]  (gangrun devices --help)", the
// note on a line of its own when the two do not fit in `width`.
std::string usage_line(const SubcommandSpec& subcommand, std::size_t width) {
  std::string line = "       gangrun " + std::string(subcommand.name) + " " + subcommand.arguments;
  const std::string note = "(" + std::string(subcommand.help_note) + ")";
  if (line.size() + 2 + note.size() > width)
    return line + "\n" + std::string(k_note_column, ' ') + note + "\n";
  return line + "  " + note + "\n";
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
      strings::wrap(help_column(spec), width > k_help_column + 20 ? width - k_help_column : 20);
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
  std::string out = "Usage: gangrun [OPTIONS] [--] PROGRAM [ARGS...]\n";
  for (const SubcommandSpec& subcommand : subcommand_table()) out += usage_line(subcommand, width);
  out += "\n";
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

// The help of a subcommand that takes the launch options: its usage line,
// what it does, then the options that matter to it.
template <typename Matters>
std::string launch_options_help(std::string_view name, std::string_view intro, std::size_t width,
                                Matters&& matters) {
  std::string out = "Usage: gangrun " + std::string(name) + " [--json] [OPTIONS]\n\n";
  append_paragraph(out, intro, width);
  out += "\n";
  for (const OptionSpec& spec : option_table()) {
    if (matters(spec)) append_option(out, spec, width);
  }
  return out;
}

std::string devices_help_text(std::size_t width) {
  std::string out =
      launch_options_help("devices", k_devices_intro, width, [](const OptionSpec& spec) {
        return spec.group == OptionGroup::devices || spec.name == opt::nproc_per_node ||
               spec.name == opt::num_gpus || spec.name == opt::json || spec.name == opt::verbose;
      });
  out += "\n";
  append_paragraph(out,
                   "Library paths: GANGRUN_CUDA_LIBRARY (default libcuda.so.1), "
                   "GANGRUN_LEVEL_ZERO_LIBRARY (default libze_loader.so.1), GANGRUN_SYSFS_ROOT "
                   "(default /) for the KFD topology.",
                   width);
  return out;
}

constexpr std::string_view k_preflight_intro =
    "Runs a short job with these launch options, on this node or on every node of the job "
    "through the same rendezvous (start it on every node as you would the job, or let srun or "
    "a hostfile do it), and checks what would stop the real one: every rank reaching the "
    "store, the workers' interpreter importing torch, devices and masks, free space in the log "
    "directory, /dev/shm, open-file and locked-memory limits, versions and variables that "
    "differ between nodes, clock offsets, and an all-reduce over the gang and over node pairs "
    "(gloo on CPU, NCCL with GPUs) with the bandwidth of each. Prints a table (where rank 0 "
    "ran) or, with --json, a document for tools. Exit status: 0 nothing failed (warnings "
    "allowed), 6 a check failed, 2 usage, 3 the nodes did not meet. Takes every launch "
    "option; these matter most:";

std::string preflight_help_text(std::size_t width) {
  return launch_options_help("preflight", k_preflight_intro, width, [](const OptionSpec& spec) {
    return spec.group == OptionGroup::nodes || spec.name == opt::nproc_per_node ||
           spec.name == opt::python || spec.name == opt::log_dir ||
           spec.name == opt::preflight_timeout || spec.name == opt::json ||
           spec.name == opt::verbose;
  });
}

std::string completion_help_text() {
  return "Usage: gangrun completion " + find_subcommand("completion")->arguments +
         "\n\nPrints the completion script of that shell, generated from gangrun's own "
         "option table.\nInstalled packages put them where each shell looks; to try one:\n"
         "  source <(gangrun completion bash)\n"
         "  gangrun completion zsh > ~/.zfunc/_gangrun   (a directory on $fpath)\n"
         "  gangrun completion fish | source\n";
}

std::string help_text(HelpTopic topic) {
  switch (topic) {
    case HelpTopic::launch:
      return help_text();
    case HelpTopic::devices:
      return devices_help_text();
    case HelpTopic::preflight:
      return preflight_help_text();
    case HelpTopic::completion:
      return completion_help_text();
  }
  return {};
}

std::string version_text() { return std::string("gangrun ") + GANGRUN_VERSION; }

}  // namespace gangrun::cli_docs
