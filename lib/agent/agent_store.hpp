// The store gangrun hosts for its workers, as torchrun's agent does: workers
// get TORCHELASTIC_USE_AGENT_STORE=True and connect to it as clients, so a
// failed rank 0 no longer takes the store with it.
#pragma once

#include "launch/plan.hpp"
#include "store/server.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>

namespace gangrun::agent {

// The address the agent store listens on: the master address on a single
// node (loopback by default, so nothing outside the machine can reach it),
// every interface ("::", or "0.0.0.0" where IPv6 is off) when other nodes
// must reach it.
std::string agent_store_bind_host(const launch::LaunchPlan& plan);

// Starts the agent store on io (gangrun's event loop) at the plan's master
// port, or an ephemeral port when none was given. A port that cannot be
// bound is ErrorCode::store, and the message names the address and how to
// choose another.
Expected<std::unique_ptr<store::Server>> start_agent_store(boost::asio::io_context& io,
                                                           const launch::LaunchPlan& plan);

}  // namespace gangrun::agent
