#include "logmux/prefix.hpp"

#include "util/strings.hpp"

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

}  // namespace gangrun::logmux
