#include "report/node_name.hpp"

#include <fmt/format.h>

namespace gangrun::report {

std::string node_name(std::optional<int> node_rank, std::string_view host,
                      std::string_view address) {
  bool address_says_more = !address.empty() && address != host;
  if (!node_rank) {
    return address_says_more ? fmt::format("{} ({})", host, address) : std::string(host);
  }
  if (!address_says_more) return fmt::format("node {} ({})", *node_rank, host);
  return fmt::format("node {} ({}, {})", *node_rank, host, address);
}

}  // namespace gangrun::report
