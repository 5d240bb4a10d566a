// How the nodes of a job meet (torchrun's --rdzv_backend), and the one table
// of the backends' names: the option's parser, its --help choices and
// default, and --dry-run's JSON all read it, so a name is spelled once.
#pragma once

#include <optional>
#include <string_view>

namespace gangrun::config {

enum class RendezvousBackend {
  // Each node gives its --node_rank; the store is at --master_addr/--master_port.
  static_ranks,
  // Nodes join at --rdzv_endpoint and are given their ranks; --nnodes may be
  // a MIN:MAX range.
  c10d,
};

struct RendezvousBackendName {
  RendezvousBackend backend;
  std::string_view name;  // as torchrun spells it, lower case
};

// In --help's order, the default first.
inline constexpr RendezvousBackendName k_rendezvous_backends[] = {
    {RendezvousBackend::static_ranks, "static"},
    {RendezvousBackend::c10d, "c10d"},
};

inline constexpr RendezvousBackend k_default_rendezvous_backend = RendezvousBackend::static_ranks;

constexpr std::string_view backend_name(RendezvousBackend backend) {
  for (const RendezvousBackendName& row : k_rendezvous_backends) {
    if (row.backend == backend) return row.name;
  }
  return {};
}

// The backend of a lower-case name; nullopt for any other word.
constexpr std::optional<RendezvousBackend> backend_named(std::string_view name) {
  for (const RendezvousBackendName& row : k_rendezvous_backends) {
    if (row.name == name) return row.backend;
  }
  return std::nullopt;
}

}  // namespace gangrun::config
