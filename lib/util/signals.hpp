// Signal names and numbers, for messages, reports and --signals_to_handle.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gangrun::signals {

// "SIGTERM" for 15; "SIG<n>" for a number without a name (real-time signals).
std::string name(int signal_number);

// Accepts "SIGTERM", "sigterm", "TERM", "term" or "15"; nullopt if unknown.
std::optional<int> from_text(std::string_view text);

}  // namespace gangrun::signals
