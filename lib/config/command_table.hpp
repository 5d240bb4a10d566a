// The words around the launch options, once, as plain data: the
// subcommands, the shells of `gangrun completion`, and the actions and
// options of `gangrun store`. The parsers (cli.cpp, store_cli.cpp) and the
// documents made from them (cli_docs/: --help, gangrun(1), completion
// scripts) all walk these tables, so a word added here is parsed, documented
// and completed alike. The launch options have their own table
// (option_table.hpp).
#pragma once

#include "config/option_table.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// ---- subcommands ---------------------------------------------------------------

// A first word that names a subcommand; any other first word starts a launch.
enum class Subcommand { devices, preflight, stacks, top, report, store, completion };

struct SubcommandSpec {
  Subcommand id;
  std::string_view name;
  // What follows the name in usage lines: "[--json] [OPTIONS]"; for store and
  // completion it is made from their tables ("serve|get|...|num-keys ...").
  std::string arguments;
  std::string_view summary;    // one line, for completion menus
  std::string_view help_note;  // after the usage line of --help, in parentheses
  std::string_view manual;     // the paragraph of gangrun(1)
};

// devices, preflight, stacks, top, report, store, completion: in the order every document lists
// them.
const std::vector<SubcommandSpec>& subcommand_table();

// The subcommand an exact word names; nullptr for any other word.
const SubcommandSpec* find_subcommand(std::string_view word);

// ---- shells ----------------------------------------------------------------------

enum class Shell { bash, zsh, fish };

// "bash", "zsh", "fish": the names `gangrun completion` accepts, in that order.
const std::vector<std::string_view>& shell_names();

// The shell an exact, lower-case name refers to; nullopt for any other word.
std::optional<Shell> parse_shell(std::string_view name);

// ---- gangrun store -------------------------------------------------------------

enum class StoreAction { help, serve, get, set, add, wait, check, delete_key, keys, num_keys };

struct StoreActionSpec {
  std::string_view name;  // as typed: "num-keys"
  StoreAction action;
  std::string_view help;   // one sentence, capitalized, no final period
  std::string_view alias;  // another accepted spelling ("num_keys"), or empty
};

// Every action but help, in the order --help lists them.
const std::vector<StoreActionSpec>& store_action_table();
// The names of store_action_table(), in its order.
const std::vector<std::string_view>& store_action_names();

// An option of `gangrun store`: a client option (before or after the
// action) or, with `serve`, an option of `store serve`.
struct StoreOptionWord {
  std::string_view name = {};     // dash-case, without "--"; snake_case is accepted too
  std::string_view metavar = {};  // empty: a flag
  std::vector<std::string_view> choices = {};  // --help shows them in place of the metavar
  ValueHint value_hint = ValueHint::none;
  bool serve = false;                  // an option of `store serve`, else a client option
  std::string_view default_text = {};  // the value when not given; empty: none
  std::string_view help = {};          // one sentence, capitalized, no final period
};
// Client options first, then serve's, each in the order --help lists them.
const std::vector<StoreOptionWord>& store_option_words();

}  // namespace gangrun::config
