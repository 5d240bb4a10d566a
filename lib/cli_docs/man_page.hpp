// gangrun(1), generated from the option and command tables the parser uses
// (config/option_table.hpp, config/command_table.hpp), so the manual lists
// exactly the subcommands, options, spellings, values and defaults gangrun
// accepts.
// tools/gen_man writes it at build time; the package installs it.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::cli_docs {

// The whole manual page in roff with the man macros (NAME, SYNOPSIS,
// DESCRIPTION, OPTIONS by group, ENVIRONMENT, EXIT STATUS, EXAMPLES, SEE ALSO).
// `version` goes into the page footer ("gangrun 0.1.0"). The text depends on
// nothing else, no date included, so two builds of one version give the same
// bytes (reproducible packages).
std::string man_page(std::string_view version);

// Text made safe for a roff text line or a quoted macro argument: '\' becomes
// \e, every '-' \- (so options render as ASCII hyphen-minus and copy and paste),
// '\'' \(aq, '`' \(ga, '"' \(dq, and a line that would start with '.' (a
// control line) is guarded with \&. Newlines are kept.
std::string roff_escape(std::string_view text);

}  // namespace gangrun::cli_docs
