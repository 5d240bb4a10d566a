// The store gangrun hosts for its workers, as torchrun's agent does: workers
// get TORCHELASTIC_USE_AGENT_STORE=True and connect to it as clients, so a
// failed rank 0 no longer takes the store with it.
#pragma once

#include "launch/plan.hpp"
#include "store/server.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::agent {

// The address the agent store listens on: the master address on a single
// node (loopback by default, so nothing outside the machine can reach it).
// On many nodes: --local_addr when given, else every address the master
// address (or the c10d endpoint) resolves to, so that a loopback address
// stays loopback and an interface's address listens on that interface
// alone; only when the master address is this host's own name and resolves
// only to loopback here (Debian's 127.0.1.1), every interface ("::", or
// "0.0.0.0" where IPv6 is off), said in the log.
std::string agent_store_bind_host(const launch::LaunchPlan& plan);

// The connections a job's own clients may hold open at once at the store a
// node hosts: four per node's agent (the participant's link and waits, the
// gang doctor's two) and two per rank (PyTorch's store client, and the one
// more some libraries open). A store is sized for twice that, so that
// reconnects and `gangrun stacks` or `top` fit beside it.
std::size_t job_store_connections(const launch::LaunchPlan& plan);

// The store's --max-connections unless given: its own default (16 Ki), or
// twice job_store_connections() for a job that needs more (from 1,366 nodes
// of one rank, 410 of eight), so that a big job's own workers and agents are
// never the newcomers over the cap (store/server.hpp: those replace an
// address's newest idle connections).
std::size_t default_max_connections(const launch::LaunchPlan& plan);

// Listens on host at the plan's master port (an ephemeral one when none was
// given), sized for the plan's workers, with keep_alive on every connection
// when given, and publish_only_prefixes refused to clients
// (store::ServerSettings); "::" falls back to "0.0.0.0" on a host without
// IPv6. The store's own error, naming the address, when it cannot listen.
Expected<std::unique_ptr<store::Server>> listen_for_workers(
    boost::asio::io_context& io, const launch::LaunchPlan& plan, const std::string& host,
    std::optional<store::KeepAlive> keep_alive = std::nullopt,
    std::vector<std::string> publish_only_prefixes = {});

// Starts the agent store on io (gangrun's event loop) at the plan's master
// port, or an ephemeral port when none was given. A port that cannot be
// bound is ErrorCode::store, and the message names the address and how to
// choose another.
Expected<std::unique_ptr<store::Server>> start_agent_store(boost::asio::io_context& io,
                                                           const launch::LaunchPlan& plan);

}  // namespace gangrun::agent
