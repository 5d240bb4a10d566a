// gangrun(1) is generated from the option table; these checks keep it complete
// (every spelling of every option) and valid roff (nothing a formatter would
// take for a request, an escape or a hyphen).
#include "cli_docs/man_page.hpp"
#include "config/option_table.hpp"
#include "util/exit_codes.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

namespace {

using Catch::Matchers::Contains;
using gangrun::cli_docs::man_page;
using gangrun::cli_docs::roff_escape;
using gangrun::config::option_table;
using gangrun::config::OptionSpec;

std::string bold_option(std::string_view spelling) {
  return "\\fB" + roff_escape("--" + std::string(spelling)) + "\\fR";
}

}  // namespace

TEST_CASE("config::roff_escape makes text safe for roff", "[config]") {
  CHECK(roff_escape("plain text") == "plain text");
  CHECK(roff_escape("--nproc_per_node") == "\\-\\-nproc_per_node");
  CHECK(roff_escape("C:\\path") == "C:\\epath");
  CHECK(roff_escape("'[rank${rank}]: '") == "\\(aq[rank${rank}]: \\(aq");
  CHECK(roff_escape("say \"hi\" `now`") == "say \\(dqhi\\(dq \\(ganow\\(ga");
  // A '.' that starts a line would make it a request; one inside a line is text.
  CHECK(roff_escape(".TH oops") == "\\&.TH oops");
  CHECK(roff_escape("a.b\n.c\n..") == "a.b\n\\&.c\n\\&..");
  CHECK(roff_escape("'quoted line") == "\\(aqquoted line");
  CHECK(roff_escape("") == "");
}

TEST_CASE("config::man_page has the sections of a manual page", "[config]") {
  const std::string page = man_page("1.2.3");
  CHECK(page.starts_with(".\\\""));
  CHECK_THAT(page, Contains("\n.TH GANGRUN 1 \"\" \"gangrun 1.2.3\""));
  for (const char* section : {"\n.SH NAME\ngangrun \\- ", "\n.SH SYNOPSIS\n", "\n.SH DESCRIPTION\n",
                              "\n.SH OPTIONS\n", "\n.SH ENVIRONMENT\n", "\n.SH \"EXIT STATUS\"\n",
                              "\n.SH EXAMPLES\n", "\n.SH \"SEE ALSO\"\n.BR srun (1),\n"}) {
    CHECK_THAT(page, Contains(section));
  }
  for (const char* subcommand : {".B gangrun devices\n", ".B gangrun store\n",
                                 ".B gangrun completion\n", R"(\fBzsh\fR|\fBfish\fR)"}) {
    CHECK_THAT(page, Contains(subcommand));
  }
  for (const char* variable : {"GANGRUN_CUDA_LIBRARY", "GANGRUN_LEVEL_ZERO_LIBRARY",
                               "GANGRUN_SYSFS_ROOT", "LOCAL_RANK", "TORCHELASTIC_RESTART_COUNT",
                               "TORCHELASTIC_USE_AGENT_STORE", "GANGRUN_<NAME>", "PET_<NAME>"}) {
    CHECK_THAT(page, Contains(variable));
  }
  // Every launch outcome of the one exit-code table, 4, 5 and 6 included, each a .TP item.
  for (const gangrun::exit_codes::Outcome& outcome : gangrun::exit_codes::k_outcomes) {
    INFO(outcome.code);
    CHECK_THAT(page, Contains("\n.TP\n\\fB" + roff_escape(outcome.code) + "\\fR\n"));
  }
  for (const char* code : {"\\fB4\\fR", "\\fB5\\fR", "\\fB6\\fR"}) CHECK_THAT(page, Contains(code));
  // No page that does not exist (torchrun has none), and the failure window is described.
  CHECK_THAT(page, !Contains("torchrun (1)"));
  CHECK_THAT(page, Contains("failure window"));
}

TEST_CASE("config::man_page lists every spelling, value and default of every option", "[config]") {
  const std::string page = man_page("0.0.0");
  for (const OptionSpec& spec : option_table()) {
    INFO(spec.name);
    CHECK_THAT(page, Contains(std::string(".SS \"") + roff_escape(to_string(spec.group)) + "\""));
    for (const std::string& spelling : gangrun::config::long_spellings(spec)) {
      INFO(spelling);
      CHECK_THAT(page, Contains(bold_option(spelling)));
    }
    if (spec.short_name != 0) {
      CHECK_THAT(page, Contains("\n\\fB\\-" + std::string(1, spec.short_name) + "\\fR, "));
    }
    if (!spec.metavar.empty()) CHECK_THAT(page, Contains("\\fI" + roff_escape(spec.metavar)));
    for (std::string_view choice : spec.choices) {
      CHECK_THAT(page, Contains("\\fB" + roff_escape(choice) + "\\fR"));
    }
    if (spec.kind == gangrun::config::OptionKind::value && !spec.default_text.empty()) {
      CHECK_THAT(page, Contains("Default \\fB" + roff_escape(spec.default_text) + "\\fR."));
    }
  }
  CHECK_THAT(page, Contains("\\fBGANGRUN_NPROC_PER_NODE\\fR, \\fBPET_NPROC_PER_NODE\\fR"));
  CHECK_THAT(page, Contains("\n.TP\n\\fB\\-n\\fR, \\fB\\-\\-num_processes\\fR, "
                            "\\fB\\-\\-num\\-processes\\fR \\fIT\\fR\n"));
  // --help shows --dry-run first; the man page does too, then the other spelling.
  CHECK_THAT(page, Contains("\n\\fB\\-\\-dry\\-run\\fR, \\fB\\-\\-dry_run\\fR\n"));
}

TEST_CASE("config::man_page is valid roff throughout", "[config]") {
  const std::string page = man_page("0.1.0-rc.1");
  const std::set<std::string> requests = {"\\\"", "TH", "SH", "SS", "PP", "TP", "B", "BR",
                                          "br",   "nf", "fi", "RS", "RE", "nh", "ad"};
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK_FALSE(line.starts_with('\''));  // the other control character
    if (line.starts_with('.')) {
      CHECK(requests.contains(line.substr(1, line.find(' ') - 1)));
    }
  }
  // Every '-' is \- (an ASCII hyphen-minus when formatted, so options copy and
  // paste), and every backslash starts an escape the formatter knows.
  for (std::size_t at = page.find('-'); at != std::string::npos; at = page.find('-', at + 1)) {
    INFO(page.substr(at > 40 ? at - 40 : 0, 60));
    CHECK(at > 0);
    CHECK(page[at - 1] == '\\');
  }
  for (std::size_t at = page.find('\\'); at != std::string::npos; at = page.find('\\', at + 2)) {
    INFO(page.substr(at > 40 ? at - 40 : 0, 60));
    REQUIRE(at + 1 < page.size());
    CHECK(std::string("-ef\"&(").find(page[at + 1]) != std::string::npos);
    if (page[at + 1] == 'f') CHECK(std::string("BIR").find(page[at + 2]) != std::string::npos);
  }
}
