// With store_cli.cpp, the only file that includes CLI11. CLI11 splits argv
// into option values and the program; everything it finds is handed on as
// plain text (layering.cpp, build_options.cpp), so the same checks apply to
// values from the environment and the config file.
#include "config/cli.hpp"

#include "config/build_options.hpp"
#include "config/job_values.hpp"
#include "config/layering.hpp"
#include "config/option_table.hpp"
#include "util/strings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace gangrun::config {

namespace {

// Each spelling of each option is its own CLI11 option, so a value can be
// reported with the spelling the user typed.
struct Registered {
  const OptionSpec* spec;
  std::string spelling;  // "--nproc-per-node", "-n"
};
using Registry = std::map<const CLI::Option*, Registered>;

void register_spelling(CLI::App& app, Registry& registry, const OptionSpec& spec,
                       std::string spelling) {
  CLI::Option* option = nullptr;
  if (spec.kind == OptionKind::value) {
    // TakeAll keeps every occurrence in results(); the last one wins in layering.
    option = app.add_option(spelling)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  } else {
    option = app.add_flag(spelling)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  registry.emplace(option, Registered{&spec, std::move(spelling)});
}

// The long names argv's words could be: "--name" or "--name=value", without
// the dashes.
std::set<std::string, std::less<>> long_words(int argc, const char* const* argv) {
  std::set<std::string, std::less<>> words;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word.starts_with("--") && word.size() > 2)
      words.emplace(word.substr(2, word.find('=') - 2));
  }
  return words;
}

// Registers every short option, and the long spellings argv holds. CLI11
// checks each new option's names against every option added before it,
// which over all the table's spellings (hundreds) was most of gangrun's
// start-up. Leaving out the long spellings argv never names parses argv
// alike: CLI11 tells a long option from a value by its form alone, and a
// spelling not in argv cannot match a word of it.
void build_app(CLI::App& app, Registry& registry, int argc, const char* const* argv) {
  app.set_help_flag();   // --help is ours: cli_docs/help_text.cpp writes it from the table
  app.prefix_command();  // the first word that is not an option starts the program
  const std::set<std::string, std::less<>> words = long_words(argc, argv);
  for (const OptionSpec& spec : option_table()) {
    for (const std::string& name : long_spellings(spec)) {
      if (words.contains(name)) register_spelling(app, registry, spec, "--" + name);
    }
    if (spec.short_name != 0)
      register_spelling(app, registry, spec, std::string("-") + spec.short_name);
  }
}

// CLI11 only runs out of arguments for an option that takes a value when
// that option is the last word of argv.
tl::unexpected<Error> missing_value(int argc, const char* const* argv) {
  std::string spelling = argc > 1 ? argv[argc - 1] : "";
  spelling = spelling.substr(0, spelling.find('='));
  const OptionSpec* spec = nullptr;
  if (spelling.starts_with("--")) {
    spec = find_option(std::string_view(spelling).substr(2));
  } else if (spelling.size() == 2) {
    spec = find_option_by_short_name(spelling[1]);
  }
  std::string message = spelling + ": missing value";
  if (spec != nullptr) message += " (expected " + spelling + " " + std::string(spec->metavar) + ")";
  return fail_usage(message);
}

// Option values in the order given: parse_order() lists an option once per
// value it received, and results() holds those values in the same order.
std::vector<CommandLineValue> values_in_order(const CLI::App& app, const Registry& registry) {
  std::vector<CommandLineValue> values;
  std::map<const CLI::Option*, std::size_t> used;
  for (const CLI::Option* option : app.parse_order()) {
    const Registered& registered = registry.at(option);
    std::size_t index = used[option]++;
    const std::vector<std::string>& results = option->results();
    values.push_back(CommandLineValue{
        .spec = registered.spec,
        .spelling = registered.spelling,
        .text = index < results.size() ? results[index] : std::string(),
    });
  }
  return values;
}

// What CLI11 left over: "--" and the program, or the program, or an option
// CLI11 did not know (which comes first, since parsing stops at the program).
Expected<std::vector<std::string>> program_words(std::vector<std::string> rest) {
  if (rest.empty()) return rest;
  if (rest.front() == "--") return std::vector<std::string>(rest.begin() + 1, rest.end());
  const std::string& first = rest.front();
  if (first.size() > 1 && first.front() == '-') {
    std::string word = first.substr(0, first.find('='));
    std::string message = "unknown option '" + word + "'";
    if (std::string close = closest_spelling(word); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    message += " (see gangrun --help; put -- before a program whose name starts with '-')";
    return fail_usage(message);
  }
  return rest;
}

bool asked_for(const std::vector<CommandLineValue>& values, std::string_view name) {
  for (const CommandLineValue& value : values) {
    if (value.spec->name == name) return true;
  }
  return false;
}

// gangrun completion SHELL: exactly one word, a shell's name.
Expected<Command> completion_command(const std::vector<std::string>& args) {
  std::vector<std::string> names(shell_names().begin(), shell_names().end());
  const std::string usage_line = "usage: gangrun completion " + strings::join(names, "|");
  if (args.empty()) return fail_usage("completion: missing shell (" + usage_line + ")");
  std::optional<Shell> shell = parse_shell(args.front());
  if (!shell && (args.front() == "--help" || args.front() == "-h")) {
    return HelpRequest{HelpTopic::completion};
  }
  if (!shell) {
    return fail_usage("completion: unknown shell " + strings::quoted(args.front()) +
                      "; accepted: " + strings::join(names, ", ") + " (" + usage_line + ")");
  }
  if (args.size() > 1) {
    return fail_usage("completion: unexpected argument " + strings::quoted(args[1]) +
                      " after the shell (" + usage_line + ")");
  }
  return CompletionRequest{*shell};
}

constexpr const char* k_stacks_help =
    "usage: gangrun stacks [--run-id ID | --pid PID | --log-dir DIR] [--native] [--json]\n"
    "                      [--stack-tool PATH]\n"
    "\n"
    "Prints every rank's stack of a job running on this host (all threads, read with py-spy),\n"
    "the ranks with the same stack grouped and the odd ones out first.\n"
    "\n"
    "  --run-id ID        the job with this run id (--rdzv-id)\n"
    "  --pid PID          the job whose gangrun has this pid\n"
    "  --log-dir DIR      the job whose logs are in DIR (its --log-dir, or the run's own)\n"
    "                     without any of the three: the only job of this user on this host\n"
    "  --native           C and C++ frames too\n"
    "  --json             one JSON object: summary, ranks, threads, frames\n"
    "  --stack-tool PATH  py-spy; default: beside the workers' interpreter, else on PATH\n";

// gangrun stacks [OPTIONS]: a handful of words, read by hand.
Expected<Command> stacks_command(const std::vector<std::string>& args) {
  StacksRequest request;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string word = args[i];
    std::optional<std::string> inline_value;
    if (std::size_t equals = word.find('=');
        word.starts_with("--") && equals != std::string::npos) {
      inline_value = word.substr(equals + 1);
      word = word.substr(0, equals);
    }
    std::replace(word.begin(), word.end(), '_', '-');
    if (word == "--help" || word == "-h") return TextOutput{k_stacks_help};
    if (word == "--native" || word == "--json") {
      (word == "--native" ? request.native : request.json) = true;
      continue;
    }
    if (word != "--run-id" && word != "--pid" && word != "--log-dir" && word != "--stack-tool") {
      return fail_usage("stacks: unknown argument " + strings::quoted(args[i]) +
                        " (see gangrun stacks --help)");
    }
    if (!inline_value && i + 1 == args.size()) {
      return fail_usage("stacks: " + word + " needs a value (see gangrun stacks --help)");
    }
    std::string value = inline_value ? *inline_value : args[++i];
    if (word == "--run-id") {
      request.run_id = value;
    } else if (word == "--log-dir") {
      request.log_dir = value;
    } else if (word == "--stack-tool") {
      request.stack_tool = value;
    } else {
      std::optional<std::int64_t> pid = strings::parse_int(value);
      if (!pid || *pid <= 0) {
        return fail_usage("stacks: --pid " + strings::quoted(value) + " is not a process id");
      }
      request.pid = static_cast<long>(*pid);
    }
  }
  int chosen = (request.run_id ? 1 : 0) + (request.pid ? 1 : 0) + (request.log_dir ? 1 : 0);
  if (chosen > 1) {
    return fail_usage("stacks: give one of --run-id, --pid and --log-dir, not " +
                      std::to_string(chosen));
  }
  return request;
}

constexpr const char* k_top_help =
    "usage: gangrun top [--run-id ID | --pid PID | --log-dir DIR] [--once] [--json]\n"
    "\n"
    "A live view of a job running on this host, refreshed every second: per rank\n"
    "its node, pid, state, CPU%, memory, the age of its last output, steps/s, GPU use, restarts\n"
    "and the doctor's marks (hung, stopped, slow). q quits.\n"
    "\n"
    "  --run-id ID        the job with this run id (--rdzv-id)\n"
    "  --pid PID          the job whose gangrun has this pid\n"
    "  --log-dir DIR      the job whose logs are in DIR (its --log-dir, or the run's own)\n"
    "                     without any of the three: the only job of this user on this host\n"
    "  --once             print one frame and exit (plain text when not on a terminal)\n"
    "  --json             print every node's snapshot as one JSON object and exit\n";

// gangrun top [OPTIONS]: the job as for stacks, and how to show it.
Expected<Command> top_command(const std::vector<std::string>& args) {
  TopRequest request;
  std::vector<std::string> job_words;
  for (const std::string& arg : args) {
    std::string word = arg;
    std::replace(word.begin(), word.end(), '_', '-');
    if (word == "--help" || word == "-h") return TextOutput{k_top_help};
    if (word == "--once" || word == "--json") {
      (word == "--once" ? request.once : request.json) = true;
    } else if (word == "--native" || word.starts_with("--stack-tool")) {
      return fail_usage("top: unknown argument " + strings::quoted(arg) +
                        " (see gangrun top --help)");
    } else {
      job_words.push_back(arg);
    }
  }
  auto job = stacks_command(job_words);
  if (!job) {
    std::string message = job.error().message();
    if (message.starts_with("stacks: ")) message = "top: " + message.substr(8);
    std::size_t help = message.find("gangrun stacks --help");
    if (help != std::string::npos) message.replace(help, 21, "gangrun top --help");
    return fail_usage(message);
  }
  request.job = std::get<StacksRequest>(*job);
  return request;
}

constexpr const char* k_report_help =
    "usage: gangrun report RUN_DIR [RUN_DIR ...] [-o FILE]\n"
    "\n"
    "Writes RUN_DIR/report.html again from RUN_DIR/report.json (both written when a run\n"
    "with --log-dir DIR ends, in the run's directory DIR/<run_id>_<unique>): a timeline\n"
    "with a lane per rank grouped by node, restarts, exits and the root cause, the\n"
    "failure window, a hang with every rank's stack, stopped and slow ranks. One file,\n"
    "no network needed to view it. Prints the page's path.\n"
    "\n"
    "Several RUN_DIRs, one per node of a job, make one page of every node, written to\n"
    "report-<run_id>.html in the directory that holds the first RUN_DIR.\n"
    "\n"
    "  -o, --output FILE  write the page to FILE instead\n";

constexpr const char* k_report_usage = "usage: gangrun report RUN_DIR [RUN_DIR ...] [-o FILE]";

// gangrun report RUN_DIR [RUN_DIR ...] [-o FILE]: directories, and where the
// page goes.
Expected<Command> report_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) return TextOutput{k_report_help};
  ReportRequest request;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (!options_done && word == "--") {
      options_done = true;
    } else if (!options_done && (word == "-o" || word == "--output")) {
      if (i + 1 == args.size() || args[i + 1].empty()) {
        return fail_usage("report: " + word + " needs a file (" + k_report_usage + ")");
      }
      request.output = args[++i];
    } else if (!options_done && word.starts_with("--output=")) {
      request.output = word.substr(9);
      if (request.output->empty()) {
        return fail_usage(std::string("report: --output= needs a file (") + k_report_usage + ")");
      }
    } else if (!options_done && word.starts_with("-")) {
      return fail_usage("report: unknown option " + strings::quoted(word) + " (" + k_report_usage +
                        "; a directory named -x: ./-x)");
    } else if (word.empty()) {
      return fail_usage(std::string("report: an empty run directory (") + k_report_usage + ")");
    } else {
      request.run_dirs.push_back(word);
    }
  }
  if (request.run_dirs.empty()) {
    return fail_usage(std::string("report: give a run directory (") + k_report_usage + ")");
  }
  return request;
}

// gangrun store ...: the store's parser writes its own help.
Expected<Command> store_command(const std::vector<std::string>& args, const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(store, parse_store_command(args, env));
  if (store->action == StoreAction::help) return TextOutput{std::move(store->help_text)};
  return StoreRequest{std::move(*store)};
}

}  // namespace

Expected<Command> parse_command_line(int argc, const char* const* argv, const EnvMap& env) {
  if (argc < 1 || argv == nullptr) return fail_usage("empty argument vector");
  const SubcommandSpec* subcommand = argc > 1 ? find_subcommand(argv[1]) : nullptr;
  Purpose purpose = Purpose::launch;
  if (subcommand != nullptr) {
    const std::vector<std::string> args(argv + 2, argv + argc);
    switch (subcommand->id) {
      case Subcommand::stacks:
        return stacks_command(args);
      case Subcommand::top:
        return top_command(args);
      case Subcommand::report:
        return report_command(args);
      case Subcommand::store:
        return store_command(args, env);
      case Subcommand::completion:
        return completion_command(args);
      case Subcommand::devices:
      case Subcommand::preflight:
        purpose = subcommand->id == Subcommand::devices ? Purpose::devices : Purpose::preflight;
        --argc;  // "devices" becomes argv[0]: CLI11 skips it
        ++argv;
        break;
    }
  }
  CLI::App app("gangrun", "gangrun");
  Registry registry;
  build_app(app, registry, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ArgumentMismatch&) {
    return missing_value(argc, argv);
  } catch (const CLI::Error& error) {
    return fail_usage(error.what());
  }

  std::vector<CommandLineValue> given = values_in_order(app, registry);
  if (asked_for(given, opt::help)) {
    switch (purpose) {
      case Purpose::devices:
        return HelpRequest{HelpTopic::devices};
      case Purpose::preflight:
        return HelpRequest{HelpTopic::preflight};
      case Purpose::launch:
        break;
    }
    return HelpRequest{HelpTopic::launch};
  }
  if (asked_for(given, opt::version)) return VersionRequest{};

  GANGRUN_TRY_ASSIGN(program, program_words(app.remaining()));
  // Layering's problems and the typing's are reported together.
  Problems problems;
  Layers layered = layer_values(given, env, problems);
  GANGRUN_TRY_ASSIGN(
      options, build_options(layered, std::move(*program), env, purpose, std::move(problems)));
  GANGRUN_TRY(check_slurm_job(*options));
  if (purpose == Purpose::devices) return DevicesRequest{std::move(*options)};
  if (purpose == Purpose::preflight) {
    // argv[0] is "preflight" here: the nodes gangrun starts run it again.
    return PreflightRequest{std::move(*options), std::vector<std::string>(argv, argv + argc)};
  }
  return LaunchRequest{std::move(*options), std::vector<std::string>(argv + 1, argv + argc)};
}

}  // namespace gangrun::config
