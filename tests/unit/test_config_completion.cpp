// The completion scripts are generated from the option table, so each must
// name every spelling of every option and every fixed value; the store words
// completion lists by hand are held against the store parser here. The real
// shells run the scripts in tests/integration/test_completions.py.
#include "cli_docs/completion.hpp"
#include "cli_docs/help_text.hpp"
#include "config/command_table.hpp"
#include "config/option_table.hpp"
#include "config/store_cli.hpp"
#include "config_test_support.hpp"
#include "util/strings.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using gangrun::Expected;
using gangrun::cli_docs::completion_script;
using gangrun::config::Shell;

constexpr Shell k_shells[] = {Shell::bash, Shell::zsh, Shell::fish};

const char* name_of(Shell shell) {
  switch (shell) {
    case Shell::bash:
      return "bash";
    case Shell::zsh:
      return "zsh";
    case Shell::fish:
      return "fish";
  }
  return "?";
}

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// WORD occurs in TEXT with no word character (letters, digits, '_', '-') on either side.
bool has_word(const std::string& text, const std::string& word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    bool clean_before = at == 0 || !word_char(text[at - 1]);
    bool clean_after = at + word.size() == text.size() || !word_char(text[at + word.size()]);
    if (clean_before && clean_after) return true;
  }
  return false;
}

// How SHELL's script names an option spelled "--name" or "-x".
std::string as_written(Shell shell, const std::string& spelling) {
  if (shell != Shell::fish) return spelling;
  if (spelling.starts_with("--")) return "-l " + spelling.substr(2);
  return "-s " + spelling.substr(1);
}

// An "@NAME@" of the templates left in a script.
bool has_unfilled_marker(const std::string& script) {
  for (std::size_t at = script.find('@'); at != std::string::npos; at = script.find('@', at + 1)) {
    std::size_t end = at + 1;
    while (end < script.size() &&
           ((script[end] >= 'A' && script[end] <= 'Z') || script[end] == '_')) {
      ++end;
    }
    if (end > at + 1 && end < script.size() && script[end] == '@') return true;
  }
  return false;
}

std::string joined(const std::vector<std::string_view>& values) {
  return gangrun::strings::join(std::vector<std::string>(values.begin(), values.end()), " ");
}

// The smallest valid `gangrun store ACTION ...` of each action.
const std::map<std::string, std::vector<std::string>>& minimal_store_commands() {
  static const std::map<std::string, std::vector<std::string>> commands = {
      {"serve", {"serve"}},        {"get", {"get", "k"}},   {"set", {"set", "k", "v"}},
      {"add", {"add", "k"}},       {"wait", {"wait", "k"}}, {"check", {"check", "k"}},
      {"delete", {"delete", "k"}}, {"keys", {"keys"}},      {"num-keys", {"num-keys"}},
  };
  return commands;
}

}  // namespace

TEST_CASE("completion: every option spelling, short name and value set is in each script",
          "[completion]") {
  using namespace gangrun::config;
  for (Shell shell : k_shells) {
    INFO(name_of(shell));
    const std::string script = completion_script(shell);
    for (const OptionSpec& spec : option_table()) {
      for (const std::string& spelling : long_spellings(spec)) {
        CHECK(has_word(script, as_written(shell, "--" + spelling)));
      }
      if (spec.short_name != 0) {
        CHECK(has_word(script, as_written(shell, std::string("-") + spec.short_name)));
      }
      if (!spec.choices.empty()) CHECK_THAT(script, Contains(joined(spec.choices)));
      if (!spec.suggestions.empty()) CHECK_THAT(script, Contains(joined(spec.suggestions)));
    }
    for (std::string_view subcommand : {"devices", "store", "completion"}) {
      CHECK(has_word(script, std::string(subcommand)));
    }
    CHECK_THAT(script, Contains("bash zsh fish"));
    for (std::string_view action : store_action_names()) {
      CHECK(has_word(script, std::string(action)));
    }
    for (const StoreOptionWord& option : store_option_words()) {
      CHECK(has_word(script, as_written(shell, "--" + std::string(option.name))));
      CHECK(has_word(script, as_written(shell, "--" + snake_case(option.name))));
      if (!option.choices.empty()) CHECK_THAT(script, Contains(joined(option.choices)));
    }
  }
}

TEST_CASE("completion: the table's value hints and suggestions are where completion needs them",
          "[completion]") {
  using namespace gangrun::config;
  CHECK(find_option_by_name("log_dir")->value_hint == ValueHint::directory);
  CHECK(find_option_by_name("config")->value_hint == ValueHint::file);
  CHECK(find_option_by_name("report")->value_hint == ValueHint::file);
  CHECK(joined(find_option_by_name("nproc_per_node")->suggestions) == "auto gpu xpu cpu");
  CHECK(joined(find_option_by_name("redirects")->suggestions) == "0 1 2 3");
  CHECK(joined(find_option_by_name("tee")->suggestions) == "0 1 2 3");
  // Suggestions are open sets: a number still parses.
  CHECK(gangrun::config::test::launch({"--nproc_per_node", "3", "x"}).nproc_per_node.has_value());
}

TEST_CASE("completion: each script is for its own shell", "[completion]") {
  using namespace gangrun::config;
  CHECK_THAT(completion_script(Shell::bash), Contains("complete -F _gangrun gangrun"));
  CHECK(completion_script(Shell::zsh).starts_with("#compdef gangrun\n"));
  CHECK_THAT(completion_script(Shell::fish), Contains("complete -c gangrun"));
  for (Shell shell : k_shells) {
    INFO(name_of(shell));
    const std::string script = completion_script(shell);
    CHECK(script.ends_with("\n"));
    CHECK_FALSE(has_unfilled_marker(script));
  }
}

TEST_CASE("completion: shell names", "[completion]") {
  using namespace gangrun::config;
  CHECK(shell_names() == std::vector<std::string_view>{"bash", "zsh", "fish"});
  CHECK(parse_shell("bash") == Shell::bash);
  CHECK(parse_shell("zsh") == Shell::zsh);
  CHECK(parse_shell("fish") == Shell::fish);
  for (std::string_view bad : {"", "tcsh", "Bash", "bash ", "powershell"}) {
    INFO(bad);
    CHECK_FALSE(parse_shell(bad));
  }
}

TEST_CASE("completion: 'gangrun completion SHELL' gives the script; anything else is exit 2",
          "[completion]") {
  using namespace gangrun::config;
  using gangrun::config::test::parse;
  using gangrun::config::test::usage_error;
  for (Shell shell : k_shells) {
    Expected<Command> command = parse({"completion", name_of(shell)});
    REQUIRE(command);
    CHECK(std::holds_alternative<CompletionRequest>(*command));
    CHECK(completion_script(std::get<CompletionRequest>(*command).shell) ==
          completion_script(shell));
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"completion"},
           {"completion", "tcsh"},
           {"completion", "bash", "extra"},
       }) {
    INFO(gangrun::strings::join(args, " "));
    std::string message = usage_error(args);
    CHECK_THAT(message, Contains("bash") && Contains("zsh") && Contains("fish"));
  }
  CHECK_THAT(usage_error({"completion", "tcsh"}), Contains("'tcsh'"));
  for (const char* help : {"--help", "-h"}) {
    Expected<Command> shown = parse({"completion", help});
    REQUIRE(shown);
    CHECK(std::holds_alternative<HelpRequest>(*shown));
    CHECK_THAT(gangrun::cli_docs::help_text(std::get<HelpRequest>(*shown).topic),
               Contains("Usage: gangrun completion bash|zsh|fish"));
  }
  // After "--" or options, "completion" is a program, as "store" and "devices" are.
  Expected<Command> command = parse({"--", "completion", "bash"});
  REQUIRE(command);
  CHECK(std::holds_alternative<LaunchRequest>(*command));
}

TEST_CASE("completion: the store actions and options it offers are the store parser's",
          "[completion][store]") {
  using namespace gangrun::config;
  std::vector<std::string> offered(store_action_names().begin(), store_action_names().end());
  std::vector<std::string> known;
  for (const auto& [action, args] : minimal_store_commands()) known.push_back(action);
  std::sort(offered.begin(), offered.end());
  CHECK(offered == known);

  for (const auto& [action, args] : minimal_store_commands()) {
    INFO(action);
    CHECK(parse_store_command(args, {}));
    CHECK_FALSE(parse_store_command({action + "x"}, {}));
  }
  for (const StoreOptionWord& option : store_option_words()) {
    for (const std::string& spelling :
         {"--" + std::string(option.name), "--" + snake_case(option.name)}) {
      INFO(spelling);
      std::vector<std::string> args =
          option.serve ? std::vector<std::string>{"serve"} : std::vector<std::string>{"get", "k"};
      args.push_back(spelling);
      std::vector<std::string_view> values = option.choices;
      if (option.metavar.empty()) values = {""};
      if (values.empty()) values = {option.name == "endpoint" ? "127.0.0.1:1" : "5"};
      for (std::string_view value : values) {
        std::vector<std::string> with_value = args;
        if (!value.empty()) with_value.emplace_back(value);
        Expected<StoreCommand> parsed = parse_store_command(with_value, {});
        if (!parsed) FAIL(parsed.error().message());
      }
      // The wrong side of serve is rejected, so `serve` is right in the table.
      std::vector<std::string> other = option.serve ? std::vector<std::string>{"keys", spelling}
                                                    : std::vector<std::string>{"serve", spelling};
      if (!option.metavar.empty()) other.emplace_back("5");
      CHECK_FALSE(parse_store_command(other, {}));
    }
  }
}
