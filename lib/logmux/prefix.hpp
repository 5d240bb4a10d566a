// Line prefixes: torchrun's template variables, expanded once per worker.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::logmux {

inline constexpr std::string_view k_default_prefix_template = "[rank${rank}]: ";

struct PrefixFields {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  std::string role_name;
  std::string host;
};

// Replaces ${rank}, ${local_rank}, ${role_name}, ${node_rank}, ${host};
// any other ${...} is left as written.
std::string expand_prefix(std::string_view templ, const PrefixFields& fields);

}  // namespace gangrun::logmux
