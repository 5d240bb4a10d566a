// The words to complete come from the tables; the descriptions of the store's
// words are their --help sentences, starting in lower case as the launch
// options' do.
#include "cli_docs/completion_shared.hpp"

#include "config/command_table.hpp"
#include "util/strings.hpp"

#include <cctype>

namespace gangrun::cli_docs::completion_parts {

using namespace config;

namespace {

// "Print KEY's value" -> "print KEY's value"; "KEY ..." stays as it is.
std::string lower_first(std::string_view text) {
  std::string out(text);
  if (out.size() > 1 && std::islower(static_cast<unsigned char>(out[1])) != 0) {
    out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  }
  return out;
}

// The first clause of a help text, for the one-line descriptions of zsh and
// fish: up to ". ", "; " or ", e.g. " outside parentheses, or ": " once the
// clause has a few words ("shared: every worker ..." keeps its "shared:").
std::string summary(std::string_view help) {
  int depth = 0;
  std::size_t words = 1;
  for (std::size_t i = 0; i < help.size(); ++i) {
    const std::string_view rest = help.substr(i);
    if (help[i] == '(') ++depth;
    if (help[i] == ')' && depth > 0) --depth;
    if (help[i] == ' ') ++words;
    if (depth > 0) continue;
    if (rest.starts_with(". ") || rest.starts_with("; ") || rest.starts_with(", e.g. ") ||
        (rest.starts_with(": ") && words >= 3)) {
      return std::string(help.substr(0, i));
    }
  }
  return std::string(help.ends_with('.') ? help.substr(0, help.size() - 1) : help);
}

// Width of the generated scripts' long lines.
constexpr std::size_t k_width = 96;

}  // namespace

std::vector<Described> subcommands() {
  std::vector<Described> out;
  for (const SubcommandSpec& spec : subcommand_table()) {
    out.push_back({std::string(spec.name), std::string(spec.summary)});
  }
  return out;
}

std::vector<Described> store_actions() {
  std::vector<Described> out;
  for (const StoreActionSpec& spec : store_action_table()) {
    out.push_back({std::string(spec.name), lower_first(spec.help)});
  }
  return out;
}

std::vector<std::string> Completable::spellings() const {
  std::vector<std::string> all = longs;
  if (!short_flag.empty()) all.push_back(short_flag);
  return all;
}

bool Completable::completes_value() const { return !values.empty() || hint != ValueHint::none; }

std::vector<Completable> launch_options() {
  std::vector<Completable> out;
  for (const OptionSpec& spec : option_table()) {
    Completable option;
    for (const std::string& spelling : long_spellings(spec)) {
      option.longs.push_back("--" + spelling);
    }
    if (spec.short_name != 0) option.short_flag = std::string("-") + spec.short_name;
    option.takes_value = spec.kind == OptionKind::value;
    option.repeatable = spec.kind == OptionKind::counter;
    option.values = spec.choices.empty() ? spec.suggestions : spec.choices;
    option.hint = spec.value_hint;
    option.metavar = std::string(spec.metavar);
    option.summary = summary(spec.help);
    out.push_back(std::move(option));
  }
  return out;
}

// CLI11's -h/--help, which every store command has.
namespace {

Completable store_help() {
  Completable help;
  help.longs = {"--help"};
  help.short_flag = "-h";
  help.summary = "print help and exit";
  return help;
}

}  // namespace

std::vector<Completable> store_options(bool serve) {
  std::vector<Completable> out;
  for (const StoreOptionWord& word : store_option_words()) {
    if (word.serve != serve) continue;
    Completable option;
    option.longs.push_back("--" + std::string(word.name));
    if (std::string snake = snake_case(word.name); snake != word.name) {
      option.longs.push_back("--" + snake);
    }
    option.takes_value = !word.metavar.empty();
    option.values = word.choices;
    option.hint = word.value_hint;
    option.metavar = std::string(word.metavar);
    option.summary = lower_first(word.help);
    out.push_back(std::move(option));
  }
  out.push_back(store_help());
  return out;
}

std::vector<Completable> all_store_options() {
  std::vector<Completable> out = store_options(false);
  std::vector<Completable> serve = store_options(true);
  out.insert(out.end(), serve.begin(), serve.end() - 1);  // one --help
  return out;
}

std::vector<std::string> names_of(const std::vector<Described>& described) {
  std::vector<std::string> names;
  names.reserve(described.size());
  for (const Described& each : described) names.push_back(each.name);
  return names;
}

std::vector<std::string> shells() {
  return std::vector<std::string>(shell_names().begin(), shell_names().end());
}

std::vector<std::string> strings_of(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

std::vector<std::string> value_spellings(const std::vector<Completable>& options) {
  std::vector<std::string> out;
  for (const Completable& option : options) {
    if (!option.takes_value) continue;
    for (const std::string& spelling : option.spellings()) out.push_back(spelling);
  }
  return out;
}

std::vector<std::string> every_spelling(const std::vector<Completable>& options) {
  std::vector<std::string> out;
  for (const Completable& option : options) {
    for (const std::string& spelling : option.spellings()) out.push_back(spelling);
  }
  return out;
}

std::string fill(std::string_view text,
                 const std::vector<std::pair<std::string_view, std::string>>& parts) {
  std::string out(text);
  for (const auto& [key, value] : parts) {
    const std::string marker = "@" + std::string(key) + "@";
    for (std::size_t at = out.find(marker); at != std::string::npos;
         at = out.find(marker, at + value.size())) {
      out.replace(at, marker.size(), value);
    }
  }
  return out;
}

std::string wrap_words(const std::vector<std::string>& words, std::string_view separator,
                       std::string_view line_end, std::string_view indent,
                       std::size_t first_column) {
  std::string out;
  std::size_t column = first_column;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) {
      if (column + separator.size() + words[i].size() + line_end.size() > k_width) {
        out += std::string(line_end) + "\n" + std::string(indent);
        column = indent.size();
        std::string_view trimmed = strings::trim(separator);
        if (!trimmed.empty()) {  // "| " continues a case pattern on the next line
          out += std::string(trimmed) + " ";
          column += trimmed.size() + 1;
        }
      } else {
        out += separator;
        column += separator.size();
      }
    }
    out += words[i];
    column += words[i].size();
  }
  return out;
}

}  // namespace gangrun::cli_docs::completion_parts
