#include "agent/agent_store.hpp"

#include "util/host.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <algorithm>

namespace gangrun::agent {

std::string agent_store_bind_host(const launch::LaunchPlan& plan) {
  if (!plan.multi_node) return plan.master_addr;
  if (plan.local_addr) return *plan.local_addr;
  if (plan.master_addr != "localhost" && plan.master_addr == plan.host &&
      host::resolves_only_to_loopback(plan.master_addr)) {
    spdlog::info(
        "rendezvous: {} is this host's name and resolves only to loopback addresses here, "
        "though other nodes reach it elsewhere: the store listens on every interface; give "
        "--local_addr ADDRESS to listen on one",
        plan.master_addr);
    return "::";
  }
  return plan.master_addr;
}

namespace {

constexpr std::size_t k_connections_per_agent = 4;
constexpr std::size_t k_connections_per_rank = 2;

}  // namespace

std::size_t job_store_connections(const launch::LaunchPlan& plan) {
  auto nodes = static_cast<std::size_t>(std::max(plan.nnodes, 1));
  auto ranks = static_cast<std::size_t>(std::max(plan.local_world_size, 1));
  return nodes * (k_connections_per_agent + k_connections_per_rank * ranks);
}

std::size_t default_max_connections(const launch::LaunchPlan& plan) {
  return std::max(store::Limits{}.max_connections, 2 * job_store_connections(plan));
}

namespace {

// A store that may hold more connections than this process may open files
// fails at accept() one by one; say so at the start, with the fix.
void warn_if_file_limit_low(const launch::LaunchPlan& plan) {
  rlimit limit{};
  if (!plan.multi_node || ::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  std::size_t needed = job_store_connections(plan);
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) return;
  spdlog::warn(
      "this node hosts the store of {} nodes of {} ranks, which may hold {} connections, and "
      "gangrun may open only {} files (ulimit -Hn): raise the limit (ulimit -n, LimitNOFILE= in a "
      "systemd unit, or the scheduler's), or connections past it are refused",
      plan.nnodes, plan.local_world_size, needed, limit.rlim_cur);
}

Expected<std::unique_ptr<store::Server>> listen_at_port(
    boost::asio::io_context& io, const launch::LaunchPlan& plan, const std::string& host, int port,
    std::optional<store::KeepAlive> keep_alive, std::vector<std::string> publish_only_prefixes) {
  store::ServerSettings settings;
  const launch::StoreLimits& limits = plan.store_limits;  // --max-connections and its neighbours
  settings.limits.max_connections = limits.max_connections.value_or(default_max_connections(plan));
  warn_if_file_limit_low(plan);
  settings.limits.max_connections_per_address =
      limits.max_connections_per_address.value_or(settings.limits.max_connections_per_address);
  settings.limits.max_total_bytes =
      limits.max_total_bytes.value_or(settings.limits.max_total_bytes);
  settings.limits.max_bytes_per_address =
      limits.max_bytes_per_address.value_or(settings.limits.max_bytes_per_address);
  settings.publish_only_prefixes = std::move(publish_only_prefixes);
  settings.host = host;
  settings.port = port;
  // run() has raised gangrun's limit already (util/open_file_limit.hpp).
  settings.raise_open_file_limit = false;
  // PyTorch opens one or two connections per rank; twice that leaves room.
  settings.expected_clients =
      4 * static_cast<std::size_t>(plan.nnodes) * static_cast<std::size_t>(plan.local_world_size);
  settings.keep_alive = keep_alive;
  auto server = store::Server::start(io, settings);
  if (!server && settings.host == "::") {
    // A host without IPv6 cannot bind "::"; serve every IPv4 interface then,
    // as PyTorch's server does.
    settings.host = "0.0.0.0";
    server = store::Server::start(io, settings);
  }
  return server;
}

}  // namespace

Expected<std::unique_ptr<store::Server>> listen_for_workers(
    boost::asio::io_context& io, const launch::LaunchPlan& plan, const std::string& host,
    std::optional<store::KeepAlive> keep_alive, std::vector<std::string> publish_only_prefixes) {
  return listen_at_port(io, plan, host, plan.master_port.value_or(0), keep_alive,
                        std::move(publish_only_prefixes));
}

Expected<std::unique_ptr<store::Server>> start_agent_store(boost::asio::io_context& io,
                                                           const launch::LaunchPlan& plan) {
  const std::string host = agent_store_bind_host(plan);
  auto server = listen_for_workers(io, plan, host);
  if (!server && plan.master_port && plan.dialects.accelerate.free_port_when_busy) {
    // accelerate launch on one machine moves to a free port when its port is
    // taken (utils/launch.py: the standalone fallback), given or not.
    auto elsewhere = listen_at_port(io, plan, host, 0, std::nullopt, {});
    if (elsewhere) {
      spdlog::warn(
          "{} {}: {}; the store listens on free port {} instead, as accelerate launch "
          "does on a single machine",
          plan.master_port_origin, *plan.master_port, server.error().message(),
          (*elsewhere)->port());
      server = std::move(elsewhere);
    }
  }
  if (!server) {
    std::string message = "cannot host the workers' store: " + server.error().message();
    if (plan.master_port) {
      message += "; choose another " + plan.master_port_origin +
                 ", or leave it out on a single node to get a free one";
    }
    return fail(ErrorCode::store, message);
  }
  spdlog::debug("store: listening on {}", strings::join((*server)->endpoints(), ", "));
  return server;
}

}  // namespace gangrun::agent
