#include "commands/text_commands.hpp"

#include "cli_docs/completion.hpp"
#include "cli_docs/help_text.hpp"
#include "util/exit_codes.hpp"

#include <iostream>
#include <string>

namespace gangrun::commands {
namespace {

// The text and, when it lacks one, a final newline.
int print(const std::string& text) {
  std::cout << text;
  if (!text.empty() && text.back() != '\n') std::cout << '\n';
  return exit_codes::k_success;
}

}  // namespace

Expected<int> run_help_command(const config::HelpRequest& request) {
  return print(cli_docs::help_text(request.topic));
}

Expected<int> run_version_command(const config::VersionRequest&) {
  return print(cli_docs::version_text());
}

Expected<int> print_text_output(const config::TextOutput& output) { return print(output.text); }

Expected<int> run_completion_command(const config::CompletionRequest& request) {
  return print(cli_docs::completion_script(request.shell));
}

}  // namespace gangrun::commands
