// Every launch option, once, as plain data. The parser (cli.cpp), the layering
// of environment and config file (layering.cpp), the typing into Options
// (build_options.cpp, through each row's apply), and --help, the man page and
// the completion scripts (cli_docs/) all walk this one table, so an option
// added here is parsed, layered, applied, documented and completed alike.
#pragma once

#include "config/option_names.hpp"
#include "util/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// The --help sections, in the order they are printed.
enum class OptionGroup {
  process_counts,
  devices,
  nodes,
  program,
  output,
  supervision,
  reporting,
  accelerate,  // accelerate launch's own flags (config/accelerate/accelerate_options.cpp)
  deepspeed,   // deepspeed's own flags (config/deepspeed/deepspeed_options.cpp)
  hosts,       // hostfiles and starting gangrun on other hosts (config/hosts/hosts_options.cpp)
  general
};
const char* to_string(OptionGroup group);

enum class OptionKind {
  value,    // takes one value: "--opt V" or "--opt=V"
  flag,     // boolean; "--opt" is true, "--opt=false" is accepted
  counter,  // repeatable flag whose occurrences add up (-v -v, -vv)
};

// Which long spelling --help shows first; both are always accepted.
enum class Spelling { snake, dash };

// What a shell completion script offers for an option's value besides its
// choices and suggestions (cli_docs/completion.hpp).
enum class ValueHint {
  none,       // free text: nothing to offer
  file,       // any file
  directory,  // a directory
  command,    // an executable: a command on PATH, or a path
};

struct Options;

// Types an option's text into the Options it belongs to (config/option_apply.hpp
// makes them from a member pointer and a parser); a usage error says what is
// wrong with the text, and the caller prefixes where the text came from.
using ApplyFn = Expected<void> (*)(std::string_view text, Options& options);

struct OptionSpec {
  std::string_view name =
      {};               // snake_case: Options field, origins key, GANGRUN_/PET_ suffix, config key
  char short_name = 0;  // 0: none; else "-x"
  std::vector<std::string_view> aliases = {};  // other snake_case names (each also in dash-case)
  OptionGroup group = OptionGroup::general;
  OptionKind kind = OptionKind::value;
  std::string_view metavar = {};  // "N", "FILE"; empty for flags and counters
  std::string_view default_text =
      {};  // parsed like a user value when nothing else gives one; empty: unset
  std::vector<std::string_view> choices = {};  // the complete set of values, when it is fixed
  // Values shell completion offers when the set is open (nproc_per_node also
  // takes a number); completion offers choices when there are any.
  std::vector<std::string_view> suggestions = {};
  ValueHint value_hint = ValueHint::none;
  std::string_view help = {};
  Spelling shown = Spelling::snake;
  bool command_line_only = false;  // --help, --version: never read from environment or file
  // Non-empty: an option of another launcher that gangrun cannot honour. It is
  // parsed (so the user hears why, not "unknown option"), and giving it from
  // any layer is a usage error with this reason and what to do instead.
  std::string_view refused = {};
  // Where the value goes. Null only for rows that never reach Options: refused
  // ones, --help and --version (the CLI answers them), and accelerate's own
  // flags, which accelerate/accelerate_values.cpp turns into the workers' variables.
  ApplyFn apply = nullptr;
};

// All options, grouped by OptionGroup in printing order.
const std::vector<OptionSpec>& option_table();

// The options of one tool's own flags, each in its own file; option_table()
// places them before the general options.
std::vector<OptionSpec> accelerate_option_specs();
std::vector<OptionSpec> deepspeed_option_specs();
std::vector<OptionSpec> hosts_option_specs();

// "nproc_per_node" -> "nproc-per-node".
std::string dash_case(std::string_view snake_name);
// "nproc-per-node" -> "nproc_per_node".
std::string snake_case(std::string_view name);

// Every long spelling of an option without the leading "--": its name and
// aliases, each in snake_case and, where different, dash-case.
std::vector<std::string> long_spellings(const OptionSpec& spec);

// The name as --help shows it first, e.g. "--dry-run", "--nproc_per_node".
std::string display_name(const OptionSpec& spec);

// The option a long name (without "--", either spelling, alias or not) belongs
// to; nullptr when there is none.
const OptionSpec* find_option(std::string_view long_name);

// The long spelling closest to a mistyped one ("--nproc_per_nod" ->
// "--nproc_per_node"), or "" when none is close.
std::string closest_spelling(std::string_view typed);

// The option an exact snake_case name refers to; nullptr when there is none.
const OptionSpec* find_option_by_name(std::string_view snake_name);

// The row of a name from opt:: (config/option_names.hpp). Every such name has a
// row (test_config_option_rows.cpp checks it), so this lookup cannot fail.
const OptionSpec& option_row(std::string_view name);

// The option whose short name is letter ('n' for -n); nullptr when none is.
const OptionSpec* find_option_by_short_name(char letter);

}  // namespace gangrun::config
