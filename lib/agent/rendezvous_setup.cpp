#include "agent/rendezvous_setup.hpp"

#include "agent/agent_store.hpp"
#include "launch/network_interface.hpp"
#include "rendezvous/keys.hpp"
#include "store/client_common.hpp"
#include "store/default_port.hpp"
#include "util/exit_codes.hpp"
#include "util/host.hpp"
#include "util/signals.hpp"
#include "util/strings.hpp"

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace gangrun::agent {

std::chrono::milliseconds from_seconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
}

namespace {

store::KeepAlive keep_alive_of(const launch::LaunchPlan& plan) {
  const config::RendezvousConf& conf = plan.rendezvous;
  return store::KeepAlive{from_seconds(conf.keep_alive_interval), conf.keep_alive_max_attempt};
}

// make_plan gives a multi-node plan its master port (29500 by default).
int store_port(const launch::LaunchPlan& plan) {
  return plan.master_port.value_or(store::k_default_port);
}

Expected<std::unique_ptr<store::Server>> listen_on(boost::asio::io_context& io,
                                                   const launch::LaunchPlan& plan,
                                                   const std::string& host) {
  return listen_for_workers(io, plan, host, keep_alive_of(plan),
                            rendezvous::keys::coordinator_only_prefixes());
}

// The store's endpoints for the log: "127.0.0.1:29500", "every interface".
std::string listening_text(const store::Server& server) {
  return strings::join(server.endpoints(), ", ");
}

// The node that hosts the store listens on --local_addr when it has one,
// and every agent, this one too, connects to --master_addr. When that is
// another address of this same host (a loopback one, or one an interface
// here holds), the connection reaches this host where nothing listens, and
// the agent waited out the join timeout for its own store. Only literal
// addresses are judged (no name is looked up), and a --master_addr no
// interface here holds may be forwarded to --local_addr (a cloud's public
// address), so it is left alone.
Expected<void> check_store_reachable_here(const launch::LaunchPlan& plan) {
  if (!plan.local_addr || *plan.local_addr == plan.master_addr) return {};
  boost::system::error_code bad_listen;
  boost::system::error_code bad_master;
  auto listen = boost::asio::ip::make_address(*plan.local_addr, bad_listen);
  auto master = boost::asio::ip::make_address(plan.master_addr, bad_master);
  if (bad_listen || bad_master || listen.is_unspecified() || listen == master) return {};
  bool master_is_here =
      master.is_loopback() ||
      launch::interface_holding(launch::list_network_interfaces(), master.to_string());
  if (!master_is_here) return {};
  std::string why = plan.c10d ? "--rdzv_conf is_host=true" : "node rank 0";
  return fail_usage(
      "this node hosts the rendezvous store (" + why + ") and listens on --local_addr " +
      *plan.local_addr + ", but every node, this one too, connects to the store at " +
      "--master_addr " + plan.master_addr + ", where it does not listen: give the address of " +
      "this node that the others reach to both (--master_addr " + *plan.local_addr +
      " on every node), or drop --local_addr on this node so that the store listens on " +
      plan.master_addr);
}

}  // namespace

Expected<std::unique_ptr<store::Server>> host_rendezvous_store(boost::asio::io_context& io,
                                                               const launch::LaunchPlan& plan) {
  std::optional<bool> is_host = plan.rendezvous.is_host;
  if (!plan.c10d) is_host = plan.node_rank == 0;
  if (is_host == false) return std::unique_ptr<store::Server>();
  std::string where = host::endpoint_text(plan.master_addr, store_port(plan));
  if (is_host == true) {
    GANGRUN_TRY(check_store_reachable_here(plan));
    auto server = listen_on(io, plan, agent_store_bind_host(plan));
    if (!server) {
      return fail(ErrorCode::store,
                  "cannot host the rendezvous store: " + server.error().message() +
                      "; free the port, choose another with " + plan.master_port_origin +
                      (plan.master_port_origin == "--rdzv_endpoint" ? "" : " or --rdzv_endpoint") +
                      ", or give --local_addr the address of this host that other nodes reach");
    }
    spdlog::info("rendezvous: hosting the store at {} (listening on {})", where,
                 listening_text(**server));
    return server;
  }
  // Listening on the endpoint's own address succeeds only on its host, and
  // only for the first agent there.
  auto server = listen_on(io, plan, plan.master_addr);
  if (!server) {
    spdlog::debug("rendezvous: not hosting the store at {} ({})", where, server.error().message());
    return std::unique_ptr<store::Server>();
  }
  spdlog::info("rendezvous: hosting the store at {} (listening on {})", where,
               listening_text(**server));
  return server;
}

rendezvous::CoordinatorSettings coordinator_settings(const launch::LaunchPlan& plan,
                                                     const std::string& host_agent_id) {
  const config::RendezvousConf& conf = plan.rendezvous;
  return rendezvous::CoordinatorSettings{
      .min_nodes = plan.c10d ? plan.min_nnodes : plan.nnodes,
      .max_nodes = plan.nnodes,
      .static_ranks = !plan.c10d,
      .max_restarts = plan.max_restarts,
      .join_timeout = from_seconds(conf.join_timeout),
      .last_call_timeout = from_seconds(conf.last_call_timeout),
      .close_timeout = from_seconds(conf.close_timeout),
      .heartbeat_interval = from_seconds(conf.keep_alive_interval),
      .heartbeat_attempts = conf.keep_alive_max_attempt,
      .failure_window = from_seconds(plan.failure_window_s),
      .restart_on_hang = plan.doctor.on_hang == config::OnHang::restart,
      .secret = plan.job_secret,
      .host_agent_id = host_agent_id,
      .run_id = plan.run_id,
      .master_addr = plan.master_addr,
      .master_port = std::to_string(store_port(plan))};
}

store::ClientSettings agent_store_client(const launch::LaunchPlan& plan) {
  const config::RendezvousConf& conf = plan.rendezvous;
  store::ClientSettings client;
  client.host = plan.master_addr;
  client.port = store_port(plan);
  client.dialect = store::Dialect::validated;
  client.connect_timeout = from_seconds(conf.join_timeout);
  client.timeout = from_seconds(conf.read_timeout);
  client.keep_alive = keep_alive_of(plan);
  return client;
}

rendezvous::ParticipantSettings participant_settings(const launch::LaunchPlan& plan) {
  const config::RendezvousConf& conf = plan.rendezvous;
  std::random_device random;
  rendezvous::ParticipantSettings settings;
  settings.me.id = fmt::format("{}-{}-{:08x}", plan.host, ::getpid(), random());
  settings.me.host = plan.host;
  // Empty: the participant fills in the address its link leaves from.
  settings.me.address = plan.local_addr.value_or("");
  settings.me.node_rank = plan.c10d ? -1 : plan.node_rank;
  settings.me.local_world_size = plan.local_world_size;
  settings.me.run_id = plan.run_id;
  settings.store = agent_store_client(plan);
  settings.read_timeout = from_seconds(conf.read_timeout);
  settings.heartbeat_interval = from_seconds(conf.keep_alive_interval);
  settings.heartbeat_attempts = conf.keep_alive_max_attempt;
  settings.secret = plan.job_secret;
  settings.min_nodes = plan.c10d ? plan.min_nnodes : plan.nnodes;
  settings.max_nodes = plan.nnodes;
  return settings;
}

launch::RoundAssignment assignment_from(const rendezvous::RoundPlan& round,
                                        const rendezvous::Member& me, int attempt,
                                        const std::optional<store::AsyncClient::Ends>& store_ends) {
  return launch::RoundAssignment{
      .restart_count = round.restart_count,
      .attempt = attempt,
      .group_rank = me.group_rank,
      .group_world_size = round.nodes,
      .rank_offset = me.rank_offset,
      .world_size = round.world_size,
      .master_addr = store_ends ? store_ends->store_address : round.master_addr,
      .master_port = round.master_port};
}

namespace {

// The workers that ended by themselves, with how long ago.
std::vector<rendezvous::RankEnd> ended_by_themselves(const supervise::AttemptOutcome& outcome) {
  auto now = std::chrono::system_clock::now();
  std::vector<rendezvous::RankEnd> ended;
  for (const supervise::WorkerOutcome& worker : outcome.workers) {
    bool ended_itself = worker.started && worker.pid >= 0 && !worker.stopped_by_gangrun &&
                        worker.ended_at != std::chrono::system_clock::time_point{};
    if (!ended_itself && !worker.spawn_error) continue;
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - worker.ended_at);
    ended.push_back(
        rendezvous::RankEnd{.rank = worker.rank,
                            .failed = !worker.status.success() || worker.spawn_error,
                            .ms_ago = std::clamp<std::int64_t>(age.count(), 0, 1 << 30)});
  }
  return ended;
}

void describe_root(rendezvous::NodeReport& report, const supervise::WorkerOutcome& root) {
  report.rank = root.rank;
  report.exit_code = root.status.shell_code();
  report.what = root.spawn_error ? "could not be started: " + root.spawn_error->describe()
                                 : root.status.describe();
}

}  // namespace

rendezvous::NodeReport failure_report(const rendezvous::AgentInfo& me,
                                      const supervise::AttemptOutcome& so_far) {
  rendezvous::NodeReport report;
  report.agent = me.id;
  report.host = me.host;
  if (so_far.first_failure) describe_root(report, so_far.workers.at(*so_far.first_failure));
  report.ended = ended_by_themselves(so_far);
  return report;
}

rendezvous::NodeReport hang_report(const rendezvous::AgentInfo& me) {
  rendezvous::NodeReport report;
  report.agent = me.id;
  report.host = me.host;
  report.stopped_for_hang = true;
  report.exit_code = exit_codes::k_hang;
  report.what = "the gang made no progress within --hang-timeout; its workers were stopped";
  return report;
}

rendezvous::NodeReport round_report(const rendezvous::AgentInfo& me,
                                    const supervise::AttemptOutcome& outcome,
                                    bool stopped_for_round_end) {
  rendezvous::NodeReport report = failure_report(me, outcome);
  report.stopped_for_round_end = stopped_for_round_end;
  report.succeeded = outcome.succeeded();
  if (outcome.stopped_for_hang && !outcome.stopped_by_signal) {
    rendezvous::NodeReport hung = hang_report(me);
    hung.ended = std::move(report.ended);
    hung.stopped_for_round_end = stopped_for_round_end;
    report = std::move(hung);
  }
  if (outcome.stopped_by_signal && !stopped_for_round_end) {
    report.stop_signal = outcome.stopped_by_signal;
    report.exit_code = 128 + *outcome.stopped_by_signal;
    report.what = "received " + signals::name(*outcome.stopped_by_signal);
  }
  return report;
}

}  // namespace gangrun::agent
