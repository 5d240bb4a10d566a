#include "logmux/prefix.hpp"

#include "util/strings.hpp"

#include <cctype>
#include <optional>

namespace gangrun::logmux {

std::string expand_prefix(std::string_view templ, const PrefixFields& fields) {
  return strings::expand_template(templ, [&](std::string_view name) -> std::optional<std::string> {
    if (name == "rank") return std::to_string(fields.rank);
    if (name == "local_rank") return std::to_string(fields.local_rank);
    if (name == "node_rank") return std::to_string(fields.node_rank);
    if (name == "role_name") return fields.role_name;
    if (name == "host") return fields.host;
    return std::nullopt;
  });
}

std::string_view prefix_for_line(std::string_view prefix, std::string_view line) {
  std::string_view tag = prefix.substr(0, prefix.find_last_not_of(" \t") + 1);
  // A tag that ends in a letter or digit ("rank1") could be the start of
  // another's ("rank12"): only one closed by punctuation is recognised.
  bool closed = !tag.empty() && std::ispunct(static_cast<unsigned char>(tag.back())) != 0;
  if (closed && line.starts_with(tag)) return {};
  return prefix;
}

}  // namespace gangrun::logmux
