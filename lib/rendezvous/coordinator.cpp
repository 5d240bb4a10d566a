#include "rendezvous/coordinator.hpp"

#include "rendezvous/keys.hpp"
#include "rendezvous/signing.hpp"
#include "report/blame.hpp"
#include "report/node_name.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <set>

namespace gangrun::rendezvous {
namespace asio = boost::asio;

namespace {

JobOutcome ended_with(int exit_code, std::string message, std::string root_agent = "",
                      std::optional<int> stop_signal = std::nullopt,
                      std::vector<int> waited_for = {}) {
  return JobOutcome{.exit_code = exit_code,
                    .message = std::move(message),
                    .root_agent = std::move(root_agent),
                    .stop_signal = stop_signal,
                    .waited_for = std::move(waited_for)};
}

// "rank 4", "ranks 4-7".
std::string rank_range(int first, int count) {
  if (count == 1) return fmt::format("rank {}", first);
  return fmt::format("ranks {}-{}", first, first + count - 1);
}

double seconds(std::chrono::milliseconds duration) {
  return std::chrono::duration<double>(duration).count();
}

// A node of a round, as every message names it (report/node_name.hpp); a
// report from an agent the round does not hold by its host name alone.
std::string node_of(const RoundPlan& plan, const std::string& agent, std::string_view host) {
  const Member* member = plan.member(agent);
  return member == nullptr ? std::string(host) : node_name(*member);
}

std::string describe_failure(const NodeReport& report, const RoundPlan& plan) {
  std::string node = node_of(plan, report.agent, report.host);
  if (report.rank) return fmt::format("rank {} on {} failed ({})", *report.rank, node, report.what);
  return fmt::format("{} failed ({})", node, report.what);
}

}  // namespace

struct Coordinator::Impl {
  using Clock = std::chrono::steady_clock;

  struct Agent {
    AgentInfo info;
    store::ConnectionId link = 0;
    std::uint64_t order = 0;  // joins before it
    Clock::time_point last_heard;
    std::uint64_t beats = 0;  // its latest heartbeat's count: each must be higher
  };

  // A node's latest word on its workers, and when it was read.
  struct Heard {
    NodeReport report;
    std::chrono::system_clock::time_point at;
  };

  struct Round {
    RoundPlan plan;
    std::map<std::string, std::optional<NodeReport>> answers;  // one per member
    std::map<std::string, Heard> heard;                        // failures and answers
    std::set<std::string> lost;
    std::optional<RoundEnd> end;
    std::optional<NodeReport> root;  // the report that ended it, if a node's
    std::vector<int> waited_for;     // whom its failure is blamed on
    bool judging = false;            // a failure came; the others' are gathered
  };

  asio::io_context& io;
  store::Server& server;
  CoordinatorSettings settings;
  Signer signer;  // bound to this job's nonce once it is published
  // The stacks key's (signing.hpp: derived_key), which `gangrun stacks` asks
  // with; nullopt without a secret.
  std::optional<Signer> stacks_signer;
  // The gang doctor's requests of the running round (keys::doctor_ask).
  std::int64_t doctor_requests = 0;
  // The latest requests' keys, oldest first, to delete once they are
  // k_doctor_requests_kept behind.
  struct NumberedAsk {
    std::uint64_t round = 0;
    std::int64_t number = 0;
    std::string ask_id;
  };
  std::deque<NumberedAsk> kept_requests;
  // Asks it may still take at once: a burst, refilled a few a second.
  double doctor_ask_budget = k_doctor_ask_burst;
  Clock::time_point doctor_budget_at = Clock::now();
  static constexpr double k_doctor_ask_burst = 10;
  static constexpr double k_doctor_asks_per_second = 2;
  std::map<std::string, Agent> agents;  // joined and still connected
  std::map<store::ConnectionId, std::string> agent_of_link;
  // Connection tokens (keys::connection) already taken: each protects only
  // the connection that wrote it first.
  std::set<std::string> connection_tokens;
  // Other connections protected for each agent (its waits, the doctor's).
  std::map<std::string, int> protected_connections;
  static constexpr int k_max_connections_per_agent = 4;
  std::set<std::string> welcomed;  // ids whose welcome (or refusal) is published
  std::uint64_t joins = 0;
  std::uint64_t rejected = 0;  // messages not believed
  std::uint64_t refusals = 0;  // agents turned away

  std::optional<Round> round;                // running or ending
  std::vector<std::string> assignment_keys;  // the latest round's (keys::assignment)
  std::uint64_t next_number = 0;
  int restart_count = 0;
  bool forming = false;
  bool first_round = true;
  bool last_call_armed = false;
  asio::steady_timer last_call;
  asio::steady_timer join_deadline;
  asio::steady_timer close_deadline;
  asio::steady_timer heartbeat_check;
  asio::steady_timer failure_window;
  Clock::time_point last_waiting_note = Clock::now();
  Clock::time_point last_check = Clock::now();
  std::optional<JobOutcome> outcome;
  std::function<void()> answered;

  Impl(asio::io_context& io_context, store::Server& store_server, CoordinatorSettings values)
      : io(io_context),
        server(store_server),
        settings(std::move(values)),
        signer(settings.secret, settings.run_id),
        last_call(io_context),
        join_deadline(io_context),
        close_deadline(io_context),
        heartbeat_check(io_context),
        failure_window(io_context) {
    publish_nonce();
    server.observe(store::ServerEvents{
        .run_key_set = [this](store::ConnectionId from, const std::string& key,
                              const std::string& value) { on_key(from, key, value); },
        .connection_closed = [this](store::ConnectionId link) { on_closed(link); }});
    start_forming();
    watch_heartbeats();
  }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() { server.observe({}); }

  // An agent as every message names it (report/node_name.hpp): with its
  // node rank in the running round, else the one it brought (static ranks),
  // else (c10d, between rounds) none.
  std::string name_of(const AgentInfo& info) const {
    if (round && round->plan.member(info.id) != nullptr) {
      return node_of(round->plan, info.id, info.host);
    }
    std::optional<int> node_rank;
    if (info.node_rank >= 0) node_rank = info.node_rank;
    return report::node_name(node_rank, info.host, info.address);
  }

  // Every value the coordinator writes is sealed for its key.
  void publish(const std::string& key, const std::string& message) {
    server.publish(key, signer.seal(key, message));
  }

  // The job's nonce, sealed before the signer is bound to it: every agent
  // reads it first, and every MAC from then on covers it, so nothing sealed
  // for another job (or another start of this one) is believed here.
  void publish_nonce() {
    std::string nonce = new_job_nonce();
    // Sealed for no run id: an agent of another job that shares the secret
    // reads it too, joins, and is told which job this is.
    server.publish(keys::nonce(), Signer(settings.secret, "").seal(keys::nonce(), nonce));
    signer.bind_to_job(nonce);
    if (!settings.secret || settings.secret->empty()) return;
    stacks_signer.emplace(derived_key(*settings.secret, k_stacks_purpose, settings.run_id),
                          settings.run_id);
    stacks_signer->bind_to_job(nonce);
  }

  // A message not believed: logged (the first few, then every 1000th, so a
  // flood cannot fill the log) and otherwise ignored.
  void reject(store::ConnectionId from, const std::string& why) {
    ++rejected;
    if (rejected <= 10 || rejected % 1000 == 0) {
      spdlog::warn("rendezvous: ignored a message on connection {} ({} so far): {}", from, rejected,
                   why);
    }
  }

  // ---- what the agents write ------------------------------------------------

  void on_key(store::ConnectionId from, const std::string& key, const std::string& value) {
    const keys::ParsedKey parsed = keys::parse(key);
    switch (parsed.kind) {
      case keys::Kind::foreign:
        return;
      case keys::Kind::doctor_ask:
      case keys::Kind::other_doctor:
        return on_doctor_key(from, key, parsed, value);
      case keys::Kind::join:
        return on_join(from, key, parsed.agent, value);
      case keys::Kind::connection:
        return on_connection(from, key, parsed, value);
      default:
        break;
    }
    // Whatever else an agent writes counts only on the link it joined with.
    auto link = agent_of_link.find(from);
    if (link == agent_of_link.end()) return reject(from, key + " was written by no agent's link");
    Agent& agent = agents.at(link->second);
    auto message = signer.open(key, value);
    if (!message) return reject(from, message.error().message());
    if (parsed.kind == keys::Kind::alive) return on_heartbeat(from, agent, *message);
    agent.last_heard = Clock::now();
    bool failed = parsed.kind == keys::Kind::failed;
    if (!failed && parsed.kind != keys::Kind::result) return;
    if (!parsed.round || parsed.agent != agent.info.id) {
      return reject(from, key + ": an agent reports for itself only");
    }
    if (!round || round->plan.round != *parsed.round) return;  // a stale round's
    auto report = node_report_from_json(*message);
    if (!report || report->agent != agent.info.id) {
      return reject(from,
                    report ? key + ": the report names another agent" : report.error().message());
    }
    if (!round->answers.contains(parsed.agent)) return;  // a spare has no workers to report
    round->heard[parsed.agent] = Heard{*report, std::chrono::system_clock::now()};
    if (failed) {
      if (!round->end) on_failure(*report);
      return;
    }
    on_result(parsed.agent, *report);
  }

  // Turns an agent away with the reason, once per id: an id that was
  // answered already is left alone, so that a stranger cannot refuse a real
  // agent by writing a join under its id.
  // At most k_max_refusals answers: a flood of forged joins must not grow
  // the store without bound.
  void refuse(const std::string& id, const std::string& why) {
    constexpr std::uint64_t k_max_refusals = 1000;
    if (refusals >= k_max_refusals || !welcomed.insert(id).second) return;
    ++refusals;
    publish(keys::welcome(id), why);
  }

  void on_join(store::ConnectionId from, const std::string& key, std::string_view claimed_id,
               const std::string& value) {
    std::string claimed(claimed_id);
    auto message = signer.open(key, value);
    if (!message) {
      reject(from, message.error().message());
      if (auto other_job = run_id_of_other_job(key, value)) {
        return refuse(claimed, another_job(*other_job));
      }
      return refuse(claimed, fmt::format("the store at {}:{} authenticates its agents with the "
                                         "job's secret, and this agent's join {}: give every node "
                                         "the same GANGRUN_JOB_SECRET",
                                         settings.master_addr, settings.master_port,
                                         value.find(':') == 64 ? "has another" : "has none"));
    }
    auto info = agent_info_from_json(*message);
    if (!info) return reject(from, info.error().message());
    if (info->id != claimed) return reject(from, key + " holds the join of another agent");
    if (agents.contains(info->id) || agent_of_link.contains(from) || welcomed.contains(info->id)) {
      return reject(from, fmt::format("{} joined twice", info->id));
    }
    if (info->run_id != settings.run_id) return refuse(info->id, another_job(info->run_id));
    if (auto wrong = misplaced(*info)) {
      spdlog::warn("rendezvous: turned away the agent on {}: {}",
                   report::node_name(std::nullopt, info->host, info->address), *wrong);
      return refuse(info->id, *wrong);
    }
    if (auto holder = seat_holder(*info)) {
      // The seat stays with the agent that has it; both sides hear of it.
      std::string why = fmt::format(
          "two agents claim node rank {}: the agent on {} holds it, the one on {} came later "
          "and was turned away; give each node its own --node_rank",
          info->node_rank, report::node_name(std::nullopt, holder->info.host, holder->info.address),
          report::node_name(std::nullopt, info->host, info->address));
      spdlog::warn("rendezvous: {}", why);
      return refuse(info->id, why);
    }
    welcomed.insert(info->id);
    publish(keys::welcome(info->id), "");
    std::string id = info->id;
    spdlog::info("rendezvous: the agent on {} joined ({} now)", name_of(*info), agents.size() + 1);
    agents[id] = Agent{std::move(*info), from, joins++, Clock::now()};
    agent_of_link[from] = id;
    // Its link must outlive any storm of strangers' connections.
    server.protect(from);
    if (outcome) return;  // it reads the outcome and leaves
    if (forming) return try_form();
    bool can_grow = !settings.static_ranks && round && !round->end &&
                    static_cast<int>(round->plan.members.size()) < settings.max_nodes;
    if (can_grow) {
      end_round(EndReason::scale_up,
                fmt::format("{} joined; a round with more nodes begins", name_of(agents[id].info)));
      return;
    }
    spdlog::info("rendezvous: {} waits as a spare for the next round", name_of(agents[id].info));
  }

  // One of an agent's other connections: protected like its link, when
  // sealed for this job (with a secret) and while the agent has fewer than
  // k_max_connections_per_agent (without a secret anyone may claim a few).
  void on_connection(store::ConnectionId from, const std::string& key,
                     const keys::ParsedKey& parsed, const std::string& value) {
    if (!parsed.token) return reject(from, key + " names no token");
    const std::string& agent = parsed.agent;
    auto message = signer.open(key, value);
    if (!message) return reject(from, message.error().message());
    if (!agents.contains(agent)) return reject(from, key + ": no agent " + agent + " has joined");
    // Counted before a token is kept, so that a flood of claims keeps at
    // most k_max_connections_per_agent tokens an agent.
    int& count = protected_connections[agent];
    if (count >= k_max_connections_per_agent || agent_of_link.contains(from)) {
      return reject(from, key + ": the agent's connections are protected already");
    }
    if (!connection_tokens.insert(key).second) {
      return reject(from, key + " was written before, by another connection");
    }
    ++count;
    server.protect(from);
  }

  // The agent that holds the static node rank info asks for, if any.
  const Agent* seat_holder(const AgentInfo& info) const {
    if (!settings.static_ranks) return nullptr;
    for (const auto& [id, agent] : agents) {
      if (agent.info.node_rank == info.node_rank) return &agent;
    }
    return nullptr;
  }

  // A heartbeat counts only when it is higher than the agent's last: an old
  // one written again proves nothing about the agent's loop now.
  void on_heartbeat(store::ConnectionId from, Agent& agent, const std::string& message) {
    std::optional<std::int64_t> count = strings::parse_int(message);
    if (!count || *count <= 0 || static_cast<std::uint64_t>(*count) <= agent.beats) {
      return reject(from, fmt::format("a heartbeat of {} that is not above its last ({})",
                                      name_of(agent.info), agent.beats));
    }
    agent.beats = static_cast<std::uint64_t>(*count);
    agent.last_heard = Clock::now();
  }

  // ---- the gang doctor's requests -------------------------------------------------

  // An ask (keys::doctor_ask) becomes the round's next request when its MAC
  // is the job's or the stacks key's, for the running round, and not more
  // often than 2 a second after a burst of 10 (each makes every node read
  // its ranks).
  // Without a secret anyone's ask is taken: a request only makes the nodes
  // read and answer, never stop (the lead stops a hung gang on its own
  // reading of the silences).
  void on_doctor_key(store::ConnectionId from, const std::string& key, const keys::ParsedKey& where,
                     const std::string& value) {
    if (where.kind != keys::Kind::doctor_ask) return;
    // An ask turned away goes too, as one taken does: asks by the thousand
    // (a loop of `gangrun top`, a stranger without the secret) leave no key.
    auto turn_away = [&](const std::string& why) {
      server.unpublish(key);
      reject(from, why);
    };
    if (!where.round || where.agent.empty() || where.agent.size() > 64 ||
        !std::all_of(where.agent.begin(), where.agent.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
      return turn_away("a stack request's key is not ask/<round>/<letters and digits>");
    }
    // The coordinator publishes what it takes in its own name, into its
    // reserve of the store: without a secret, anyone's ask, so each is bounded
    // (a request is a few dozen bytes), and only the latest requests' keys
    // stay (keys::k_doctor_requests_kept), at most 2 new ones a second.
    constexpr std::size_t k_max_ask_bytes = 1024;
    if (value.size() > k_max_ask_bytes) {
      return turn_away(
          fmt::format("a stack request of {} bytes (at most {})", value.size(), k_max_ask_bytes));
    }
    auto message = signer.open(key, value);
    if (!message && stacks_signer) message = stacks_signer->open(key, value);
    if (!message) return turn_away(message.error().message());
    if (!round || round->end || round->plan.round != *where.round) {
      return turn_away(
          fmt::format("a stack request for round {}, which is not running", *where.round));
    }
    Clock::time_point now = Clock::now();
    doctor_ask_budget = std::min(
        k_doctor_ask_burst,
        doctor_ask_budget + k_doctor_asks_per_second *
                                std::chrono::duration<double>(now - doctor_budget_at).count());
    doctor_budget_at = now;
    if (doctor_ask_budget < 1) return turn_away("stack requests came faster than 2 a second");
    doctor_ask_budget -= 1;
    std::int64_t number = ++doctor_requests;
    publish(keys::doctor_request(*where.round, number), *message);
    publish(keys::doctor_asked(where.agent), std::to_string(number));
    // The ask has become the request; the asker waits for doctor_asked only.
    server.unpublish(key);
    kept_requests.push_back({.round = *where.round, .number = number, .ask_id = where.agent});
    while (static_cast<std::int64_t>(kept_requests.size()) > settings.doctor_requests_kept) {
      const NumberedAsk& old = kept_requests.front();
      server.unpublish(keys::doctor_request(old.round, old.number));
      server.unpublish(keys::doctor_asked(old.ask_id));
      kept_requests.pop_front();
    }
  }

  // The run id of a join that this job's secret sealed for another run id:
  // an agent of another job sharing the secret (its MAC covers its run id).
  std::optional<std::string> run_id_of_other_job(const std::string& key,
                                                 const std::string& value) const {
    std::size_t colon = value.find(':');
    if (!signer.authenticated() || colon == std::string::npos) return std::nullopt;
    auto info = agent_info_from_json(value.substr(colon + 1));
    if (!info || info->run_id == settings.run_id) return std::nullopt;
    Signer theirs(settings.secret, info->run_id);
    theirs.bind_to_job(signer.nonce());
    if (!theirs.open(key, value)) return std::nullopt;
    return info->run_id;
  }

  std::string another_job(const std::string& run_id) const {
    spdlog::warn("rendezvous: turned away an agent of job {}", run_id);
    return fmt::format(
        "the store at {}:{} belongs to the job with --rdzv_id {}, and this agent "
        "has --rdzv_id {}; give every node the same --rdzv_id, or another "
        "--rdzv_endpoint",
        settings.master_addr, settings.master_port, settings.run_id, run_id);
  }

  // Why a join's place in the job is impossible; nullopt when it fits.
  std::optional<std::string> misplaced(const AgentInfo& info) const {
    if (!settings.static_ranks) {
      if (info.node_rank == -1) return std::nullopt;
      return fmt::format("it brings node rank {} to a c10d rendezvous, which gives the ranks",
                         info.node_rank);
    }
    if (info.node_rank >= 0 && info.node_rank < settings.max_nodes) return std::nullopt;
    return fmt::format(
        "node rank {} is not one of 0..{} of this job (--nnodes {}); give each "
        "node --node_rank between 0 and {}",
        info.node_rank, settings.max_nodes - 1, settings.max_nodes, settings.max_nodes - 1);
  }

  void on_result(const std::string& agent, const NodeReport& report) {
    auto answer = round->answers.find(agent);
    if (answer == round->answers.end()) return;
    answer->second = report;
    if (!round->end) {
      if (!report.succeeded) {
        on_failure(report);
      } else if (std::all_of(round->answers.begin(), round->answers.end(), [](const auto& entry) {
                   return entry.second && entry.second->succeeded;
                 })) {
        end_round(EndReason::success, "every node's workers succeeded");
      }
      // Every node has answered: no failure is left to gather.
      if (round->judging && everyone_accounted_for()) judge_failures();
    }
    if (everyone_accounted_for()) after_round();
  }

  void on_closed(store::ConnectionId link) {
    auto found = agent_of_link.find(link);
    if (found == agent_of_link.end()) return;
    lose_agent(found->second, "its agent died or its network is cut off");
  }

  // The agent is gone: its link closed, or its heartbeats stopped (then the
  // link is closed here, so that the agent stops its workers if it wakes).
  // ID by value: callers pass a key of agent_of_link or agents, which this erases.
  void lose_agent(std::string id,  // NOLINT(performance-unnecessary-value-param)
                  const std::string& why, bool close_link = false) {
    Agent agent = std::move(agents.at(id));
    agents.erase(id);
    protected_connections.erase(id);
    agent_of_link.erase(agent.link);
    if (close_link) server.disconnect(agent.link, "the rendezvous dropped its agent: " + why);
    const std::string node = name_of(agent.info);
    if (outcome) return check_answered();
    if (!round || !round->answers.contains(id) || round->answers[id]) {
      if (close_link) {
        spdlog::warn("rendezvous: dropped the agent on {}: {}", node, why);
      } else {
        spdlog::info("rendezvous: the agent on {} left", node);
      }
      return;
    }
    spdlog::warn("rendezvous: lost the agent on {}: {}", node, why);
    round->lost.insert(id);
    if (!round->end) end_round(EndReason::lost_node, fmt::format("lost {}: {}", node, why));
    if (everyone_accounted_for()) after_round();
  }

  // ---- heartbeats ---------------------------------------------------------------

  std::chrono::milliseconds heartbeat_timeout() const {
    return settings.heartbeat_interval * settings.heartbeat_attempts;
  }

  void watch_heartbeats() {
    heartbeat_check.expires_after(settings.heartbeat_interval);
    heartbeat_check.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      check_heartbeats();
      watch_heartbeats();
    });
  }

  // A tick that is itself late (this host's loop was stopped or starved)
  // judges nobody: what the agents sent meanwhile may wait unread in the
  // sockets, so their clocks start again now.
  void check_heartbeats() {
    Clock::time_point now = Clock::now();
    bool on_time = now - last_check <= 2 * settings.heartbeat_interval;
    last_check = now;
    if (!on_time) {
      for (auto& [id, agent] : agents) agent.last_heard = now;
      return;
    }
    std::vector<std::string> silent;
    for (const auto& [id, agent] : agents) {
      if (now - agent.last_heard > heartbeat_timeout()) silent.push_back(id);
    }
    for (const std::string& id : silent) {
      lose_agent(id,
                 fmt::format("its agent wrote no heartbeat for {} s: it is stopped, stuck or cut "
                             "off",
                             seconds(heartbeat_timeout())),
                 true);
    }
    note_whom_we_wait_for(now);
  }

  // Every 10 s of waiting, the log says for whom, and so does the waiting
  // key, which agents that wait for the next round read and log.
  void note_whom_we_wait_for(Clock::time_point now) {
    if (now - last_waiting_note < std::chrono::seconds(10)) return;
    last_waiting_note = now;
    std::string whom = whom_we_wait_for();
    if (!whom.empty()) spdlog::warn("rendezvous: waiting for {}", whom);
    publish(keys::waiting(), whom);
  }

  // "node ranks 1, 2 to join (1 of 3 joined)", "the agent on node 1 (node2,
  // 10.0.0.2) to report how round 0 ended"; empty when nothing is awaited.
  std::string whom_we_wait_for() const {
    if (forming && settings.static_ranks) {
      std::set<int> missing;
      for (int rank = 0; rank < settings.max_nodes; ++rank) missing.insert(rank);
      for (const auto& [id, agent] : agents) missing.erase(agent.info.node_rank);
      if (missing.empty()) return "";
      std::vector<std::string> names;
      names.reserve(missing.size());
      for (int rank : missing) names.push_back(std::to_string(rank));
      return fmt::format("node rank{} {} to join ({} of {} joined)", missing.size() == 1 ? "" : "s",
                         strings::join(names, ", "), agents.size(), settings.max_nodes);
    }
    if (forming) {
      return fmt::format("at least {} nodes to join ({} joined)", settings.min_nodes,
                         agents.size());
    }
    if (!round || !round->end) return "";
    std::vector<std::string> nodes;
    for (const auto& [id, answer] : round->answers) {
      if (answer || round->lost.contains(id)) continue;
      nodes.push_back(node_of(round->plan, id, id));
    }
    if (nodes.empty()) return "";
    return fmt::format("the agent{} on {} to report how round {} ended",
                       nodes.size() == 1 ? "" : "s", strings::join(nodes, "; "), round->plan.round);
  }

  // ---- rounds -----------------------------------------------------------------

  // A node's workers failed: a signal ends the round at once; a failure
  // opens the window in which the other nodes' failures are gathered.
  void on_failure(const NodeReport& report) {
    if (report.stop_signal) {
      round->root = report;
      end_round(EndReason::signal,
                fmt::format("the agent on {} was told to stop ({})",
                            node_of(round->plan, report.agent, report.host), report.what));
      return;
    }
    if (round->judging) return;
    round->judging = true;
    round->root = report;  // until judge_failures finds the first failure of all
    if (settings.failure_window.count() == 0) return judge_failures();
    failure_window.expires_after(settings.failure_window);
    failure_window.async_wait(
        [this, number = round->plan.round](const boost::system::error_code& error) {
          if (!error && round && round->plan.round == number) judge_failures();
        });
  }

  // Ends the round for the failures heard: the job's code is the first
  // failure's, and the failure is blamed on the ranks the failed ones waited
  // for when the reports single them out (report/blame.hpp).
  void judge_failures() {
    if (round->end) return;
    failure_window.cancel();
    std::vector<report::RankFate> fates;
    std::map<int, const Member*> node_of_rank;
    const Heard* first = nullptr;
    std::chrono::system_clock::time_point first_at;
    for (const Member& member : round->plan.members) {
      std::size_t from = fates.size();
      for (int i = 0; i < member.local_world_size; ++i) {
        fates.push_back(report::RankFate{.rank = member.rank_offset + i,
                                         .state = report::RankFate::State::running,
                                         .ended_at = {}});
        node_of_rank[member.rank_offset + i] = &member;
      }
      auto heard = round->heard.find(member.id);
      if (heard == round->heard.end()) continue;
      for (const RankEnd& end : heard->second.report.ended) {
        int local = end.rank - member.rank_offset;
        if (local < 0 || local >= member.local_world_size) continue;  // not its rank
        report::RankFate& fate = fates[from + static_cast<std::size_t>(local)];
        fate.state =
            end.failed ? report::RankFate::State::failed : report::RankFate::State::succeeded;
        fate.ended_at = heard->second.at - std::chrono::milliseconds(end.ms_ago);
        if (end.failed && (!first || fate.ended_at < first_at)) {
          first = &heard->second;
          first_at = fate.ended_at;
        }
      }
    }
    // Without a failed worker listed (a node that could not start one),
    // the report that opened the window stands.
    NodeReport root = first ? first->report : *round->root;
    if (const NodeReport* hung = hung_node(*round)) {
      round->root = *hung;
      return end_round(EndReason::failure, describe_failure(*hung, round->plan));
    }
    std::string message = describe_failure(root, round->plan);
    auto blame = report::find_waited_for(fates);
    if (blame) {
      const Member* blamed = node_of_rank.at(blame->waited_for.front());
      std::map<int, std::string> blamed_nodes;  // by node rank
      for (int rank : blame->waited_for) {
        const Member* member = node_of_rank.at(rank);
        blamed_nodes.try_emplace(member->group_rank, node_name(*member));
      }
      std::vector<std::string> names;
      for (auto& [node, name] : blamed_nodes) names.push_back(std::move(name));
      message = report::describe(*blame, strings::join(names, "; "));
      root.agent = blamed->id;
      root.host = blamed->host;
      round->waited_for = blame->waited_for;
    }
    round->root = root;
    end_round(EndReason::failure, message);
  }

  void end_round(EndReason reason, std::string message) {
    spdlog::info("rendezvous: round {} ends: {}", round->plan.round, message);
    round->end = RoundEnd{reason, std::move(message)};
    publish(keys::end(round->plan.round), to_json(*round->end));
  }

  bool everyone_accounted_for() const {
    return std::all_of(round->answers.begin(), round->answers.end(), [this](const auto& entry) {
      return entry.second || round->lost.count(entry.first) != 0;
    });
  }

  // The node whose workers were stopped because the gang hung, if any:
  // the cause of the round's end, though ranks of other nodes may have
  // failed first when their peers were stopped.
  static const NodeReport* hung_node(const Round& ended) {
    for (const auto& [id, answer] : ended.answers) {
      if (answer && answer->stopped_for_hang) return &*answer;
    }
    for (const auto& [id, heard] : ended.heard) {
      if (heard.report.stopped_for_hang) return &heard.report;
    }
    return nullptr;
  }

  void after_round() {
    Round ended = std::move(*round);
    round.reset();
    bool restarts_left = restart_count < settings.max_restarts;
    switch (ended.end->reason) {
      case EndReason::success:
        return finish(ended_with(0, ""));
      case EndReason::signal:
        return finish(ended_with(128 + *ended.root->stop_signal, ended.end->message,
                                 ended.root->agent, ended.root->stop_signal));
      case EndReason::failure: {
        const NodeReport* hung = hung_node(ended);
        const std::string what = hung ? describe_failure(*hung, ended.plan) : ended.end->message;
        if (hung && (!settings.restart_on_hang || !restarts_left)) {
          return finish(ended_with(exit_codes::k_hang, what, hung->agent));
        }
        if (!restarts_left) {
          // A failure is never a success, whatever code a report carries.
          int code = ended.root->exit_code != 0 ? ended.root->exit_code : 1;
          return finish(ended_with(code, ended.end->message, ended.root->agent, std::nullopt,
                                   ended.waited_for));
        }
        ++restart_count;
        spdlog::warn("rendezvous: {}; restarting every node ({} of {} restarts)", what,
                     restart_count, settings.max_restarts);
        return start_forming();
      }
      case EndReason::lost_node:
        if (settings.static_ranks || !restarts_left) {
          return finish(ended_with(
              3, ended.end->message + (settings.static_ranks ? "" : "; no restart left")));
        }
        ++restart_count;
        return start_forming();
      case EndReason::scale_up:
      case EndReason::shutdown:
        return start_forming();
    }
  }

  void start_forming() {
    forming = true;
    last_call_armed = false;
    join_deadline.expires_after(settings.join_timeout);
    join_deadline.async_wait([this](const boost::system::error_code& error) {
      if (error || !forming) return;
      // Static ranks: name the nodes that never came.
      std::string awaited =
          settings.static_ranks ? " (waiting for " + whom_we_wait_for() + ")" : "";
      finish(ended_with(3, fmt::format("only {} of the {} nodes needed joined within the join "
                                       "timeout ({} s){}; start the missing nodes, or raise "
                                       "--rdzv_conf join_timeout",
                                       agents.size(), settings.min_nodes,
                                       seconds(settings.join_timeout), awaited)));
    });
    try_form();
  }

  void try_form() {
    int count = static_cast<int>(agents.size());
    if (settings.static_ranks) {
      if (count == settings.max_nodes) form();
      return;
    }
    if (count >= settings.max_nodes || (!first_round && count >= settings.min_nodes)) {
      return form();
    }
    if (count < settings.min_nodes || last_call_armed) return;
    last_call_armed = true;
    spdlog::info("rendezvous: {} nodes joined (at least {}); more may join for {} s", count,
                 settings.min_nodes, seconds(settings.last_call_timeout));
    last_call.expires_after(settings.last_call_timeout);
    last_call.async_wait([this](const boost::system::error_code& error) {
      if (error || !forming) return;
      if (static_cast<int>(agents.size()) >= settings.min_nodes) {
        form();
      } else {
        last_call_armed = false;  // someone left meanwhile: wait for MIN again
      }
    });
  }

  void form() {
    std::vector<const Agent*> chosen;
    for (const auto& [id, agent] : agents) chosen.push_back(&agent);
    if (settings.static_ranks) {
      std::sort(chosen.begin(), chosen.end(), [](const Agent* a, const Agent* b) {
        return a->info.node_rank < b->info.node_rank;
      });
    } else {
      // The store's host's own agent and then the first to join take part,
      // ranked in that order: agents stay joined across rounds, so a node
      // keeps its ranks while the nodes before it stay. A host name, which
      // anyone can choose, decides nothing.
      std::sort(chosen.begin(), chosen.end(), [this](const Agent* a, const Agent* b) {
        return std::pair(a->info.id != settings.host_agent_id, a->order) <
               std::pair(b->info.id != settings.host_agent_id, b->order);
      });
      if (static_cast<int>(chosen.size()) > settings.max_nodes)
        chosen.resize(static_cast<std::size_t>(settings.max_nodes));
    }
    RoundPlan plan;
    plan.round = next_number++;
    plan.restart_count = restart_count;
    plan.master_addr = settings.master_addr;
    plan.master_port = settings.master_port;
    std::string summary;
    for (const Agent* agent : chosen) {
      Member member{.id = agent->info.id,
                    .host = agent->info.host,
                    .address = agent->info.address,
                    .group_rank = static_cast<int>(plan.members.size()),
                    .rank_offset = plan.world_size,
                    .local_world_size = agent->info.local_world_size};
      summary += fmt::format("{}{}: {}", summary.empty() ? "" : "; ", node_name(member),
                             rank_range(member.rank_offset, member.local_world_size));
      plan.world_size += member.local_world_size;
      plan.members.push_back(std::move(member));
    }
    plan.nodes = static_cast<int>(plan.members.size());
    forming = false;
    first_round = false;
    last_call.cancel();
    join_deadline.cancel();
    // Not round.emplace(): clang (and so clang-tidy) cannot default-construct a nested
    // struct with member initializers from inside the enclosing class.
    round = Round{};
    round->plan = plan;
    doctor_requests = 0;
    for (const Member& member : plan.members) round->answers[member.id] = std::nullopt;
    spdlog::info("rendezvous: round {} (restart count {}): {} nodes, world size {}: {}", plan.round,
                 plan.restart_count, plan.members.size(), plan.world_size, summary);
    // Workers of this round meet in a fresh key space of the store.
    server.begin_round(plan.round);
    forget_assignments();
    for (const Member& member : plan.members) {
      std::string key = keys::assignment(plan.round, member.id);
      publish(key, to_json(assignment_of(plan, member)));
      assignment_keys.push_back(std::move(key));
    }
    publish(keys::round_brief(plan.round), to_json(Brief{RoundFormed{plan.round}}));
    publish(keys::round(plan.round), to_json(Next{plan}));
    publish(keys::latest(), std::to_string(plan.round));
  }

  // The last round's assignments: each node read its own when it formed.
  void forget_assignments() {
    for (const std::string& key : assignment_keys) server.unpublish(key);
    assignment_keys.clear();
  }

  // ---- the end ------------------------------------------------------------------

  void finish(JobOutcome result) {
    if (outcome) return;
    forming = false;
    last_call.cancel();
    join_deadline.cancel();
    if (round && !round->end) end_round(EndReason::shutdown, result.message);
    round.reset();
    outcome = result;
    std::uint64_t number = next_number++;
    spdlog::info("rendezvous: the job ends with exit code {}{}{}", result.exit_code,
                 result.message.empty() ? "" : ": ", result.message);
    forget_assignments();
    publish(keys::round_brief(number), to_json(Brief{result}));
    publish(keys::round(number), to_json(Next{result}));
    publish(keys::latest(), std::to_string(number));
    close_deadline.expires_after(settings.close_timeout);
    close_deadline.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      if (!agents.empty()) {
        spdlog::warn("rendezvous: {} agents did not read the outcome within the close timeout",
                     agents.size());
      }
      heartbeat_check.cancel();
      agents.clear();
      check_answered();
    });
    check_answered();
  }

  void check_answered() {
    if (!outcome || !agents.empty() || !answered) return;
    close_deadline.cancel();
    heartbeat_check.cancel();
    asio::post(io, std::move(answered));
    answered = nullptr;
  }
};

Coordinator::Coordinator(asio::io_context& io, store::Server& server, CoordinatorSettings settings)
    : impl_(std::make_unique<Impl>(io, server, std::move(settings))) {}

Coordinator::~Coordinator() = default;

void Coordinator::when_everyone_answered(std::function<void()> done) {
  impl_->answered = std::move(done);
  impl_->check_answered();
}

}  // namespace gangrun::rendezvous
