// Text another process wrote (a node's message, a stack's frame), as gangrun
// keeps it for log lines and reports: made printable (strings::printable),
// and at most max_size bytes both as written and once escaped, so that what
// is kept reads back the same from its own JSON. Where it does not fit, why:
// "is too long", or "is too long once made printable".
#pragma once

#include "util/strings.hpp"

#include <tl/expected.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace gangrun::strings {

inline tl::expected<std::string, std::string_view> printable_within(std::string_view text,
                                                                    std::size_t max_size) {
  if (text.size() > max_size) return tl::unexpected(std::string_view("is too long"));
  std::string shown = printable(text);
  if (shown.size() > max_size) {
    return tl::unexpected(std::string_view("is too long once made printable"));
  }
  return shown;
}

}  // namespace gangrun::strings
