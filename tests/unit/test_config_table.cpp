// The option table is the single list of options; --help, the parser and the
// layering walk it, so its invariants are checked here.
#include "cli_docs/help_text.hpp"
#include "config/option_table.hpp"
#include "config/option_values.hpp"
#include "config/options.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

namespace {

using Catch::Matchers::Contains;
using gangrun::config::option_table;
using gangrun::config::OptionKind;
using gangrun::config::OptionSpec;

std::size_t occurrences(const std::string& text, const std::string& word) {
  std::size_t count = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("config::option_table has unique names, spellings and short flags", "[config]") {
  std::set<std::string> spellings;
  std::set<char> shorts;
  for (const OptionSpec& spec : option_table()) {
    CHECK(spec.name.find('-') == std::string_view::npos);
    CHECK_FALSE(spec.help.empty());
    CHECK((spec.kind == OptionKind::value) == !spec.metavar.empty());
    for (const std::string& spelling : gangrun::config::long_spellings(spec)) {
      INFO(spelling);
      CHECK(spellings.insert(spelling).second);
      CHECK(gangrun::config::find_option(spelling) == &spec);
    }
    if (spec.short_name != 0) CHECK(shorts.insert(spec.short_name).second);
  }
  CHECK(gangrun::config::find_option("num-accelerators")->name == "num_gpus");
  CHECK(gangrun::config::find_option("nope") == nullptr);
}

TEST_CASE("config::option_table groups options in printing order", "[config]") {
  const auto& table = option_table();
  for (std::size_t i = 1; i < table.size(); ++i) {
    CHECK(static_cast<int>(table[i - 1].group) <= static_cast<int>(table[i].group));
  }
}

TEST_CASE("config::option_table defaults and choices are valid values", "[config]") {
  using namespace gangrun::config;
  CHECK(parse_nnodes(find_option_by_name("nnodes")->default_text));
  CHECK(parse_non_negative_seconds(find_option_by_name("term_timeout")->default_text) == 30.0);
  CHECK(parse_signals(find_option_by_name("signals_to_handle")->default_text));
  for (std::string_view choice : find_option_by_name("output")->choices) {
    CHECK(parse_output_mode(choice));
  }
  for (std::string_view choice : find_option_by_name("color")->choices) {
    CHECK(parse_color_mode(choice));
  }
}

TEST_CASE("config::help_text lists every option once, grouped, within 80 columns", "[config]") {
  const std::string help = gangrun::cli_docs::help_text();
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
  for (const char* group : {"Process counts", "Devices", "Nodes", "Program", "Output",
                            "Supervision", "Reporting", "General"}) {
    CHECK_THAT(help, Contains(std::string("\n") + group));
  }
  for (const OptionSpec& spec : option_table()) {
    INFO(spec.name);
    std::string entry = "  ";
    if (spec.short_name != 0) entry += std::string("-") + spec.short_name + ", ";
    entry += gangrun::config::display_name(spec);
    CHECK(occurrences(help, "\n" + entry + " ") + occurrences(help, "\n" + entry + "\n") == 1);
    for (std::string_view alias : spec.aliases) {
      CHECK(occurrences(help, "--" + std::string(alias)) == 1);
    }
  }
  CHECK_THAT(help, Contains("-n, --num_processes T"));
  CHECK_THAT(help, Contains("--term-timeout SECONDS"));
  CHECK_THAT(help, Contains("GANGRUN_<NAME>"));
}

TEST_CASE("config::version_text names the program", "[config]") {
  CHECK(gangrun::cli_docs::version_text().starts_with("gangrun "));
  CHECK(gangrun::cli_docs::version_text().size() > 8);
}

TEST_CASE("config::to_string names every source", "[config]") {
  using gangrun::config::Source;
  CHECK(std::string(to_string(Source::command_line)) == "command line");
  CHECK(std::string(to_string(Source::default_value)) == "default");
  CHECK(std::string(to_string(Source::json_config)) == "config file");
  CHECK(std::string(to_string(Source::accelerate_config)) == "config file");
  CHECK(std::string(to_string(Source::gangrun_env)) == "GANGRUN_ environment");
  CHECK(std::string(to_string(Source::pet_env)) == "PET_ environment");
}
