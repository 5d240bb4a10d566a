#include "rendezvous/participant.hpp"

#include "rendezvous/keys.hpp"

#include <spdlog/spdlog.h>

#include <charconv>

namespace gangrun::rendezvous {

namespace {

// How long an agent waits for what only other nodes decide: as long as the
// job runs. A dead peer or store is noticed by the keep-alive, not by this.
constexpr std::chrono::milliseconds k_as_long_as_the_job{std::chrono::hours(24 * 365)};

}  // namespace

struct Participant::Impl {
  ParticipantSettings settings;
  ParticipantEvents events;
  // Writes, and reads of the next round; waits for a round's end.
  store::AsyncClient writes;
  store::AsyncClient waits;
  std::optional<std::uint64_t> current;  // the round this agent's workers run in
  bool reported = false;                 // its result for `current` is sent
  bool over = false;                     // the job is done, or the store lost

  Impl(boost::asio::io_context& io, ParticipantSettings values, ParticipantEvents handlers)
      : settings(std::move(values)),
        events(std::move(handlers)),
        writes(io, settings.store),
        waits(io, settings.store) {}

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
    events.store_lost(error);
  }

  void join() {
    writes.set(keys::join(settings.me.id), to_json(settings.me),
               then<void>([this] { wait_for_welcome(); }),
               settings.store.connect_timeout + settings.read_timeout);
  }

  void wait_for_welcome() {
    writes.get(keys::welcome(settings.me.id), then<std::string>([this](std::string refusal) {
                 if (refusal.empty()) return find_latest();
                 over = true;
                 events.refused(Error(ErrorCode::usage, refusal));
               }),
               settings.read_timeout);
  }

  // An agent may join a run that is under way: it reads the latest round
  // (a running one, where it is a spare, or the outcome) before waiting.
  void find_latest() {
    writes.check({keys::latest()}, then<bool>([this](bool exists) {
                   if (!exists) return wait_for_round(0);
                   writes.get(keys::latest(), then<std::string>([this](std::string text) {
                                std::uint64_t number = 0;
                                std::from_chars(text.data(), text.data() + text.size(), number);
                                wait_for_round(number);
                              }),
                              settings.read_timeout);
                 }),
                 settings.read_timeout);
  }

  void wait_for_round(std::uint64_t number) {
    writes.get(keys::round(number), then<std::string>([this, number](std::string text) {
                 auto next = next_from_json(text);
                 if (!next) return lose(next.error());
                 if (auto* outcome = std::get_if<JobOutcome>(&*next)) {
                   over = true;
                   return events.job_done(*outcome);
                 }
                 const auto& plan = std::get<RoundPlan>(*next);
                 const Member* me = plan.member(settings.me.id);
                 if (!me) {
                   spdlog::info("rendezvous: round {} runs without this node; waiting for the next",
                                number);
                   return wait_for_round(number + 1);
                 }
                 current = number;
                 reported = false;
                 watch_round_end(number);
                 events.round_assigned(plan, *me);
               }),
               k_as_long_as_the_job);
  }

  void watch_round_end(std::uint64_t number) {
    waits.get(keys::end(number), then<std::string>([this, number](std::string text) {
                auto end = round_end_from_json(text);
                if (!end) return lose(end.error());
                if (current != number || reported) return;  // this node is past it
                events.round_ending(*end);
              }),
              k_as_long_as_the_job);
  }

  void report_failure(const NodeReport& report) {
    if (over || !current) return;
    writes.set(keys::failed(*current, settings.me.id), to_json(report), then<void>([] {}),
               settings.read_timeout);
  }

  void report_result(const NodeReport& report) {
    if (over || !current || reported) return;
    reported = true;
    std::uint64_t number = *current;
    writes.set(keys::result(number, settings.me.id), to_json(report),
               then<void>([this, number] { wait_for_round(number + 1); }), settings.read_timeout);
  }
};

Participant::Participant(boost::asio::io_context& io, ParticipantSettings settings,
                         ParticipantEvents events)
    : impl_(std::make_unique<Impl>(io, std::move(settings), std::move(events))) {}

Participant::~Participant() = default;

void Participant::join() { impl_->join(); }

void Participant::report_failure(const NodeReport& report) { impl_->report_failure(report); }

void Participant::report_result(const NodeReport& report) { impl_->report_result(report); }

const AgentInfo& Participant::me() const { return impl_->settings.me; }

}  // namespace gangrun::rendezvous
