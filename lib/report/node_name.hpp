// How every message names a node of a multi-node job: by its node rank, its
// host name and its address together. Host names alone do not tell nodes
// apart where every host has the same name (cloud images named "vm",
// containers, network namespaces); the node rank says which seat was lost,
// the address which machine to look at.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gangrun::report {

// "node 1 (vm, 10.0.0.2)"; without a node rank (a c10d agent not in a round)
// "vm (10.0.0.2)". The address is left out when it is empty or the host name
// itself.
std::string node_name(std::optional<int> node_rank, std::string_view host,
                      std::string_view address);

}  // namespace gangrun::report
