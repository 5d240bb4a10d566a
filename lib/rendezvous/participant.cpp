#include "rendezvous/participant.hpp"

#include "rendezvous/keys.hpp"
#include "rendezvous/signing.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"

#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

namespace gangrun::rendezvous {

namespace {

// How long an agent waits for what only other nodes decide: as long as the
// job runs. A dead or frozen store's host is noticed by the keep-alive and
// the heartbeats, not by this.
constexpr std::chrono::milliseconds k_as_long_as_the_job{std::chrono::hours(24 * 365)};

// How often an agent that waits for a round says what the coordinator waits for.
constexpr std::chrono::seconds k_waiting_note{10};

}  // namespace

struct Participant::Impl {
  using Clock = std::chrono::steady_clock;

  ParticipantSettings settings;
  ParticipantEvents events;
  Signer signer;
  // The link: writes, heartbeats and short reads.
  store::AsyncClient writes;
  // Waits for the next round and for a round's end.
  store::AsyncClient waits;
  boost::asio::steady_timer heartbeat;
  std::uint64_t beats = 0;
  bool beat_in_flight = false;  // a heartbeat's CHECK is not answered yet
  // Since when this agent waits for a round (not running one); nullopt while it runs one.
  std::optional<Clock::time_point> waiting_since;
  Clock::time_point last_waiting_note;
  Clock::time_point last_tick = Clock::now();
  Clock::time_point last_answer = Clock::now();
  std::optional<std::uint64_t> current;  // the round this agent's workers run in
  bool reported = false;                 // its result for `current` is sent
  bool ever_in_a_round = false;
  // A round was published before this agent first looked: a static node
  // that then finds only the job's outcome came too late for it.
  bool came_after_a_round = false;
  bool over = false;  // the job is done, or the store lost

  Impl(boost::asio::io_context& io, ParticipantSettings values, ParticipantEvents handlers)
      : settings(std::move(values)),
        events(std::move(handlers)),
        signer(settings.secret, settings.me.run_id),
        writes(io, settings.store),
        waits(io, settings.store),
        heartbeat(io) {}

  // Wraps a completion: a failure is the store lost (once), unless the job
  // is already over.
  template <typename T, typename Next>
  store::AsyncStore::Done<T> then(Next next) {
    return [this, next = std::move(next)](Expected<T> result) mutable {
      if (over) return;
      if (!result) return lose(result.error());
      if constexpr (std::is_void_v<T>) {
        next();
      } else {
        next(std::move(*result));
      }
    };
  }

  void lose(const Error& error) {
    over = true;
    heartbeat.cancel();
    events.store_lost(error);
  }

  // Writes message under key, sealed with the job's secret.
  void write(const std::string& key, const std::string& message, store::AsyncStore::Done<void> done,
             std::chrono::milliseconds timeout) {
    writes.set(key, signer.seal(key, message), std::move(done), timeout);
  }

  // The message under key (already read as value), or the store lost when
  // the job's secret did not seal it.
  template <typename Next>
  void opened(const std::string& key, const std::string& value, Next next) {
    auto message = signer.open(key, value);
    if (!message) return lose(message.error());
    next(std::move(*message));
  }

  std::string store_text() const {
    return host::endpoint_text(settings.store.host, settings.store.port);
  }

  // The job's nonce comes first (signing.hpp): the join and everything after
  // it are sealed for this start of this job only.
  // The coordinator publishes it before its store serves anyone: a store
  // without it is not a gangrun job's (another program holds the port).
  void join() {
    writes.check(
        {keys::nonce()}, then<bool>([this](bool exists) {
          if (!exists) {
            over = true;
            return events.refused(Error(
                ErrorCode::usage,
                fmt::format("the store at {} is not a gangrun job's (it has no job nonce): "
                            "another program holds the port, or an older gangrun; stop it, or "
                            "give every node another --master_port",
                            store_text())));
          }
          writes.get(keys::nonce(),
                     then<std::string>([this](const std::string& value) { on_nonce(value); }),
                     settings.read_timeout);
        }),
        settings.store.connect_timeout + settings.read_timeout);
    // The second connection is made now, beside the join, so that the wait
    // for the first round does not begin with a connection.
    waits.check({keys::latest()}, then<bool>([](bool) {}),
                settings.store.connect_timeout + settings.read_timeout);
  }

  void on_nonce(const std::string& value) {
    Signer unbound(settings.secret, "");
    if (!unbound.authenticated() && looks_sealed(value)) {
      over = true;
      return events.refused(Error(
          ErrorCode::usage,
          fmt::format("the store at {} authenticates its agents with the job's secret, and this "
                      "node has none: give every node the same GANGRUN_JOB_SECRET",
                      store_text())));
    }
    auto nonce = unbound.open(keys::nonce(), value);
    if (!nonce || !looks_like_nonce(*nonce)) {
      over = true;
      return events.refused(
          Error(ErrorCode::usage,
                fmt::format("the store at {} is not this job's: {}; give every node the same "
                            "GANGRUN_JOB_SECRET, or check that no other program holds the port",
                            store_text(),
                            nonce ? "its job nonce is not one gangrun draws"
                                  : strings::printable(nonce.error().message()))));
    }
    signer.bind_to_job(*nonce);
    // The link is up: the address it leaves from is the one the other nodes
    // know this node by.
    if (settings.me.address.empty()) {
      if (auto ends = writes.connection_ends()) settings.me.address = ends->local_address;
    }
    write(keys::join(settings.me.id), to_json(settings.me),
          then<void>([this] { wait_for_welcome(); }), settings.read_timeout);
  }

  void wait_for_welcome() {
    std::string key = keys::welcome(settings.me.id);
    writes.get(key, then<std::string>([this, key](const std::string& value) {
                 auto answer = signer.open(key, value);
                 if (answer && answer->empty()) {
                   claim_connection(waits, signer, settings.me.id);
                   // The first heartbeat one interval from now: reading the
                   // round comes first on the link.
                   last_tick = last_answer = Clock::now();
                   next_beat();
                   return find_latest();
                 }
                 over = true;
                 // A refusal from a coordinator without this job's secret
                 // cannot be verified; it is shown as it is, for the reason.
                 std::string why =
                     answer ? *answer : strings::printable(value.substr(value.find(':') + 1));
                 events.refused(Error(ErrorCode::usage, why));
               }),
               settings.read_timeout);
  }

  // ---- heartbeats ---------------------------------------------------------------

  std::chrono::milliseconds heartbeat_timeout() const {
    return settings.heartbeat_interval * settings.heartbeat_attempts;
  }

  // Written by this loop every interval. A SET has no reply, so a CHECK of
  // the key follows on the same connection: its answer comes only once the
  // store's host has taken the SET. The timer judges: no answer for the
  // heartbeat timeout means the host's loop is not running. A tick that is
  // itself late (this agent's own loop was stopped or starved) judges
  // nobody, since the answers may be waiting unread in the socket.
  void beat() {
    if (over) return;
    Clock::time_point now = Clock::now();
    if (now - last_tick > 2 * settings.heartbeat_interval) last_answer = now;
    last_tick = now;
    if (now - last_answer > heartbeat_timeout()) {
      return lose(Error(ErrorCode::store,
                        fmt::format("the store's host did not take this agent's heartbeat within "
                                    "{} s: its agent is stopped, stuck or cut off",
                                    std::chrono::duration<double>(heartbeat_timeout()).count())));
    }
    if (waiting_since && now - *waiting_since >= k_waiting_note &&
        now - last_waiting_note >= k_waiting_note) {
      last_waiting_note = now;
      say_whom_the_rendezvous_waits_for(now - *waiting_since);
    }
    if (!beat_in_flight) {
      beat_in_flight = true;
      std::string key = keys::alive(settings.me.id);
      write(
          key, std::to_string(++beats), [](const Expected<void>&) {}, settings.read_timeout);
      writes.check({key}, then<bool>([this](bool) {
                     beat_in_flight = false;
                     last_answer = Clock::now();
                   }),
                   settings.read_timeout);
    }
    next_beat();
  }

  void next_beat() {
    heartbeat.expires_after(settings.heartbeat_interval);
    heartbeat.async_wait([this](const boost::system::error_code& error) {
      if (!error) beat();
    });
  }

  // Logs what the coordinator waits for (keys::waiting), read without
  // waiting: a key not written yet says nothing.
  void say_whom_the_rendezvous_waits_for(Clock::duration waited) {
    std::string key = keys::waiting();
    double seconds = std::chrono::duration<double>(waited).count();
    writes.check({key}, then<bool>([this, key, seconds](bool exists) {
                   if (!exists) return;
                   writes.get(key,
                              then<std::string>([this, key, seconds](const std::string& value) {
                                auto whom = signer.open(key, value);
                                if (!whom || whom->empty() || !waiting_since) return;
                                spdlog::warn(
                                    "rendezvous: this node has waited {:.0f} s; the "
                                    "coordinator at {}:{} waits for {}",
                                    seconds, settings.store.host, settings.store.port,
                                    strings::printable(*whom));
                              }),
                              settings.read_timeout);
                 }),
                 settings.read_timeout);
  }

  // An agent may join a run that is under way: it reads the latest round
  // (a running one, where it is a spare, or the outcome) before waiting.
  void find_latest() {
    writes.check({keys::latest()}, then<bool>([this](bool exists) {
                   if (!exists) return wait_for_round(0);
                   came_after_a_round = true;
                   writes.get(keys::latest(), then<std::string>([this](const std::string& value) {
                                opened(keys::latest(), value, [this](const std::string& text) {
                                  std::uint64_t number = 0;
                                  std::from_chars(text.data(), text.data() + text.size(), number);
                                  wait_for_round(number);
                                });
                              }),
                              settings.read_timeout);
                 }),
                 settings.read_timeout);
  }

  // Every node waits for the round's brief and then reads its own
  // assignment (keys::round_brief); only the round's lead reads the whole
  // plan, which names every node, for its gang doctor.
  void wait_for_round(std::uint64_t number) {
    if (!waiting_since) waiting_since = Clock::now();
    std::string key = keys::round_brief(number);
    waits.get(key, then<std::string>([this, number, key](const std::string& value) {
                opened(key, value,
                       [this, number](const std::string& text) { on_brief(number, text); });
              }),
              k_as_long_as_the_job);
  }

  void on_brief(std::uint64_t number, const std::string& text) {
    auto brief = brief_from_json(text);
    if (!brief) return lose(brief.error());
    if (auto* outcome = std::get_if<JobOutcome>(&*brief)) {
      over = true;
      heartbeat.cancel();
      // A node that joined in time and saw the job end before any round
      // formed (the join timeout) is told the job's outcome as it is.
      if (!ever_in_a_round && came_after_a_round && settings.me.node_rank >= 0)
        return events.job_done(too_late(*outcome));
      return events.job_done(*outcome);
    }
    if (std::get<RoundFormed>(*brief).round != number) return lose(misnumbered(number));
    std::string key = keys::assignment(number, settings.me.id);
    writes.check({key}, then<bool>([this, number, key](bool exists) {
                   if (!exists) {
                     spdlog::info(
                         "rendezvous: round {} runs without this node; waiting for the next",
                         number);
                     return wait_for_round(number + 1);
                   }
                   writes.get(key, then<std::string>([this, number, key](const std::string& value) {
                                opened(key, value, [this, number](const std::string& place) {
                                  on_assignment(number, place);
                                });
                              }),
                              settings.read_timeout);
                 }),
                 settings.read_timeout);
  }

  void on_assignment(std::uint64_t number, const std::string& text) {
    auto assignment = assignment_from_json(text);
    if (!assignment) return lose(assignment.error());
    if (assignment->round != number) return lose(misnumbered(number));
    if (assignment->me.id != settings.me.id) {
      return lose(Error(ErrorCode::store, "round " + std::to_string(number) +
                                              " gives this node another node's place"));
    }
    if (assignment->me.group_rank != 0) return take_round(number, plan_of(*assignment));
    std::string key = keys::round(number);
    writes.get(key, then<std::string>([this, number, key](const std::string& value) {
                 opened(key, value, [this, number](const std::string& whole) {
                   auto next = next_from_json(whole);
                   if (!next) return lose(next.error());
                   const auto* plan = std::get_if<RoundPlan>(&*next);
                   if (!plan || plan->round != number) return lose(misnumbered(number));
                   take_round(number, *plan);
                 });
               }),
               settings.read_timeout);
  }

  Error misnumbered(std::uint64_t number) const {
    return Error(ErrorCode::store,
                 "round " + std::to_string(number) + "'s messages name another round");
  }

  void take_round(std::uint64_t number, const RoundPlan& plan) {
    const Member* me = plan.member(settings.me.id);
    if (!me)
      return lose(Error(ErrorCode::store,
                        "round " + std::to_string(number) + "'s plan does not name this node"));
    if (auto misfit = does_not_fit(plan, *me)) {
      return lose(Error(ErrorCode::store,
                        fmt::format("round {} from the store at {}:{} does not fit this node: {}",
                                    number, settings.store.host, settings.store.port, *misfit)));
    }
    current = number;
    ever_in_a_round = true;
    reported = false;
    waiting_since.reset();
    watch_round_end(number);
    events.round_assigned(plan, *me);
  }

  // A static node that comes after the job's outcome: its share of the job
  // never ran, which is no success whatever the job's code was.
  JobOutcome too_late(const JobOutcome& outcome) const {
    std::string how = outcome.exit_code == 0
                          ? std::string("succeeded")
                          : fmt::format("ended with exit code {}{}{}", outcome.exit_code,
                                        outcome.message.empty() ? "" : ": ", outcome.message);
    return JobOutcome{
        .exit_code = 3,
        .message = fmt::format("the job at {} {} before this node (node rank {}) joined; its "
                               "workers never ran here. Was this node started late, or twice?",
                               store_text(), how, settings.me.node_rank),
        .root_agent = "",
        .stop_signal = std::nullopt,
        .waited_for = {}};
  }

  // What this agent knows itself that a round must agree with; nullopt
  // when it does.
  std::optional<std::string> does_not_fit(const RoundPlan& plan, const Member& me) const {
    const AgentInfo& mine = settings.me;
    int nodes = plan.nodes;
    if (me.local_world_size != mine.local_world_size) {
      return fmt::format("it gives this node {} workers, not {}", me.local_world_size,
                         mine.local_world_size);
    }
    if (mine.node_rank >= 0 && me.group_rank != mine.node_rank) {
      return fmt::format("it makes this node {}, not node {}", me.group_rank, mine.node_rank);
    }
    if (nodes < settings.min_nodes || nodes > settings.max_nodes) {
      return fmt::format("it has {} nodes, not {}..{}", nodes, settings.min_nodes,
                         settings.max_nodes);
    }
    if (plan.master_addr != settings.store.host ||
        plan.master_port != std::to_string(settings.store.port)) {
      return fmt::format("it sends the workers to {}:{}", plan.master_addr, plan.master_port);
    }
    return std::nullopt;
  }

  void watch_round_end(std::uint64_t number) {
    std::string key = keys::end(number);
    waits.get(key, then<std::string>([this, number, key](const std::string& value) {
                opened(key, value, [this, number](const std::string& text) {
                  auto end = round_end_from_json(text);
                  if (!end) return lose(end.error());
                  if (current != number || reported) return;  // this node is past it
                  events.round_ending(*end);
                });
              }),
              k_as_long_as_the_job);
  }

  void report_failure(const NodeReport& report) {
    if (over || !current) return;
    write(keys::failed(*current, settings.me.id), to_json(report), then<void>([] {}),
          settings.read_timeout);
  }

  void report_result(const NodeReport& report) {
    if (over || !current || reported) return;
    reported = true;
    std::uint64_t number = *current;
    write(keys::result(number, settings.me.id), to_json(report),
          then<void>([this, number] { wait_for_round(number + 1); }), settings.read_timeout);
  }
};

void claim_connection(store::AsyncClient& client, const Signer& signer,
                      const std::string& agent_id) {
  std::string key = keys::connection(agent_id, new_job_nonce());
  client.set(
      key, signer.seal(key, ""), [](const Expected<void>&) {}, std::chrono::seconds(10));
}

Participant::Participant(boost::asio::io_context& io, ParticipantSettings settings,
                         ParticipantEvents events)
    : impl_(std::make_unique<Impl>(io, std::move(settings), std::move(events))) {}

Participant::~Participant() = default;

void Participant::join() { impl_->join(); }

void Participant::report_failure(const NodeReport& report) { impl_->report_failure(report); }

void Participant::report_result(const NodeReport& report) { impl_->report_result(report); }

const AgentInfo& Participant::me() const { return impl_->settings.me; }

const std::string& Participant::job_nonce() const { return impl_->signer.nonce(); }

std::optional<store::AsyncClient::Ends> Participant::store_connection() const {
  if (auto ends = impl_->writes.connection_ends()) return ends;
  return impl_->waits.connection_ends();
}

}  // namespace gangrun::rendezvous
