// The network interface this node's workers get for a round of a multi-node
// run: decided again as each round starts, from the local end of the
// agent's own connection to the store (store::AsyncClient::connection_ends)
// and the interfaces the host has then (launch/network_interface.hpp), so
// that an address that moved or vanished between rounds is noticed.
#pragma once

#include "launch/network_interface.hpp"
#include "launch/plan.hpp"
#include "store/async_client.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::agent {

class RoundNetwork {
 public:
  // The variables for round's workers (empty: none set), and the message
  // logged: at info for the first round and whenever it changes, said so,
  // else at debug. ends: nullopt when the agent never reached the store.
  // reached_here: where this node hosts the store, the address other nodes
  // reached it at (store::Server::address_reached_from_outside), used when
  // the agent's own connection is loopback (its master address is its own
  // name, which resolves to 127.0.1.1 here, as on Debian).
  EnvMap decide(const launch::LaunchPlan& plan, std::uint64_t round,
                const std::optional<store::AsyncClient::Ends>& ends,
                const std::vector<launch::NetworkInterface>& interfaces,
                const std::optional<std::string>& reached_here = std::nullopt);

  // The last round's message; empty before the first.
  const std::string& last_message() const { return last_message_; }

 private:
  std::string last_message_;
};

}  // namespace gangrun::agent
