#include "cli_docs/completion.hpp"

#include "cli_docs/completion_shared.hpp"

namespace gangrun::cli_docs {

std::string completion_script(config::Shell shell) {
  switch (shell) {
    case config::Shell::bash:
      return completion_parts::bash_script();
    case config::Shell::zsh:
      return completion_parts::zsh_script();
    case config::Shell::fish:
      return completion_parts::fish_script();
  }
  return {};
}

}  // namespace gangrun::cli_docs
