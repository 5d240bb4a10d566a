#include "config/problems.hpp"

namespace gangrun::config {

Expected<void> Problems::result() const {
  if (errors_.empty()) return {};
  if (errors_.size() == 1) return tl::unexpected(errors_.front());
  std::string message = std::to_string(errors_.size()) + " problems; nothing was started:";
  for (const Error& error : errors_) message += "\n  - " + error.describe();
  return fail_usage(std::move(message));
}

}  // namespace gangrun::config
