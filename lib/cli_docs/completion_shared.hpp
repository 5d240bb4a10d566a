// What the three completion generators (completion_bash.cpp, completion_zsh.cpp,
// completion_fish.cpp) share: the words to complete, taken from the option and
// command tables, and the text helpers that lay them out. Internal to cli_docs.
#pragma once

#include "config/option_table.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gangrun::cli_docs::completion_parts {

// A word offered with a one-line description: a subcommand or a store action.
struct Described {
  std::string name;
  std::string help;
};

// devices, store, completion, with their summaries.
std::vector<Described> subcommands();
// serve, get, ...: the store's actions.
std::vector<Described> store_actions();

// One option as every shell completes it.
struct Completable {
  std::vector<std::string> longs;  // "--nproc_per_node", "--nproc-per-node", ...
  std::string short_flag;          // "-n", or empty
  bool takes_value = false;
  bool repeatable = false;
  std::vector<std::string_view> values;  // offered for the value
  config::ValueHint hint = config::ValueHint::none;
  std::string metavar;
  std::string summary;

  std::vector<std::string> spellings() const;
  // Something to offer for the value, beyond "type it".
  bool completes_value() const;
};

// Every launch option, in the table's order.
std::vector<Completable> launch_options();
// The store's client options (serve false) or serve's (true), each list with
// -h/--help at its end.
std::vector<Completable> store_options(bool serve);
// Both lists, with one --help.
std::vector<Completable> all_store_options();

std::vector<std::string> names_of(const std::vector<Described>& described);
std::vector<std::string> shells();
std::vector<std::string> strings_of(const std::vector<std::string_view>& views);
// Every spelling of the options that take a value.
std::vector<std::string> value_spellings(const std::vector<Completable>& options);
// Every spelling of every option.
std::vector<std::string> every_spelling(const std::vector<Completable>& options);

// Replaces each "@KEY@" of the template.
std::string fill(std::string_view text,
                 const std::vector<std::pair<std::string_view, std::string>>& parts);

// Words joined by separator into lines of at most 96 columns, the first
// starting at first_column; every line but the last ends with line_end, and
// every line but the first starts with indent (and, when the separator is
// "| " or " | ", with "| ": a case pattern goes on).
std::string wrap_words(const std::vector<std::string>& words, std::string_view separator,
                       std::string_view line_end, std::string_view indent,
                       std::size_t first_column);

// The whole script of each shell.
std::string bash_script();
std::string zsh_script();
std::string fish_script();

}  // namespace gangrun::cli_docs::completion_parts
