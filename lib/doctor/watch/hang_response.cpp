#include "doctor/watch/hang_response.hpp"

#include "doctor/stack_tool.hpp"
#include "doctor/store_peers.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gangrun::doctor {

namespace {

// A hang's stacks may take a while on a loaded machine: nothing waits for
// them but the hang's own action (a failure's come at once: k_failure_read_limit).
constexpr std::chrono::milliseconds k_hang_read_limit{5000};
// Across nodes, how much longer than its own reading a node waits for the
// others' answers: their requests arrive a little later than its own.
constexpr std::chrono::milliseconds k_answer_margin{2000};

const char* on_hang_word(config::OnHang action) {
  switch (action) {
    case config::OnHang::report:
      return "report";
    case config::OnHang::stop:
      return "stop";
    case config::OnHang::restart:
      return "restart";
  }
  return "stop";
}

}  // namespace

HangResponse::HangResponse(boost::asio::io_context& io, Parts parts, HangWatch::ProgressFn progress,
                           std::function<void()> stop_hung, std::function<void()> reading_ended,
                           HangWatch::StartingHandler while_starting)
    : parts_(parts),
      stop_hung_(std::move(stop_hung)),
      reading_ended_(std::move(reading_ended)),
      dump_wait_(io) {
  if (parts_.plan.doctor.hang_timeout_s) {
    watch_.emplace(
        io, steady(*parts_.plan.doctor.hang_timeout_s), std::move(progress),
        [this](HangWatch::Clock::duration silent_for) { on_hang(silent_for); },
        std::move(while_starting));
  }
}

void HangResponse::round_started(const RoundStart&) {
  hang_ask_.clear();
  hang_acted_ = false;
  found_.reset();
  if (watch_ && parts_.round.watches_whole_gang()) watch_->start();
}

void HangResponse::worker_failed() {
  if (watch_) watch_->stop();  // the round is ending: a failure, not a hang
}

void HangResponse::round_ended() {
  // While the round goes on elsewhere, the lead keeps watching the other nodes (else a
  // rank hung there would be watched by nobody).
  if (watch_ && !parts_.round.watches_others_after_end()) watch_->stop();
  dump_wait_.cancel();
}

void HangResponse::gang_round_ended() {
  if (watch_ && parts_.round.over) watch_->stop();
}

void HangResponse::add_findings(report::DoctorFindings& findings) const {
  if (!found_) return;
  findings.hang = *found_;
  // The round ended (a signal, a failure) before --on-hang could act.
  if (!hang_acted_) findings.hang->action = "none";
}

// ---- this node's hang ------------------------------------------------------------

void HangResponse::on_hang(HangWatch::Clock::duration silent_for) {
  const DoctorRound& round = parts_.round;
  StackReader& reader = parts_.reader;
  std::vector<StackTarget> targets = live_targets(parts_.gang);
  if (!round.watching() || reader.running() || (targets.empty() && !round.nodes)) return;
  double silent_s = static_cast<double>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(silent_for).count()) /
                    1000.0;
  std::string where = round.nodes ? fmt::format("rank on the {} nodes", round.nodes->node_count)
                                  : fmt::format("of the {} running ranks", targets.size());
  spdlog::warn(
      "no rank made progress for {} (--hang-timeout {}): no new output line from any {}; "
      "reading their stacks before anything is stopped",
      seconds_text(silent_s), seconds_text(*parts_.plan.doctor.hang_timeout_s), where);
  if (!reader.tool().path && !reader.tool().told_missing) {
    reader.tool().told_missing = true;
    spdlog::warn("{}", doctor::missing_tool_hint());
  }
  if (round.nodes) {
    // Every node reads its own ranks, this one too, when the request comes.
    hang_ask_ = parts_.link->ask(
        {.why = doctor::NodeRequest::Why::hang, .silent_for_s = silent_s, .ask_id = {}});
    return;
  }
  reader.read(
      targets, k_hang_read_limit, [this, silent_s](const std::vector<doctor::RankStacks>& ranks) {
        StoreArrivals arrivals =
            store_arrivals(ranks, parts_.round.store, runs_python(parts_.plan));
        after_hang_read(ranks, silent_s,
                        "where the ranks are, the odd ones out first:", std::move(arrivals.missing),
                        arrivals.line);
      });
}

// ---- across nodes -------------------------------------------------------------

void HangResponse::on_node_request(std::int64_t number, const doctor::NodeRequest& request) {
  const DoctorRound& round = parts_.round;
  // A node whose ranks are done still answers while the round goes on elsewhere: with no
  // ranks, at once, so that the asking side waits only for the nodes that have some.
  if (round.over && !round.goes_on) return;
  if (parts_.reader.running()) {
    spdlog::warn(
        "gang doctor: request {} came while this node's ranks were being read; the "
        "asking side goes without this node's",
        number);
    return;
  }
  bool hang = request.why == doctor::NodeRequest::Why::hang;
  // The lead's own hang: the only request anyone acts on.
  bool own_hang = hang && round.nodes->lead && !hang_ask_.empty() && request.ask_id == hang_ask_;
  if (hang && !own_hang) {
    spdlog::warn(
        "the lead node reports a hang (the whole gang silent for {}): reading this node's "
        "ranks' stacks",
        seconds_text(request.silent_for_s));
  }
  auto answer = [this, number, hang, own_hang,
                 silent_s = request.silent_for_s](const std::vector<doctor::RankStacks>& ranks) {
    // Not known (no store port): none named.
    doctor::NodeAnswer mine{
        .ranks = ranks,
        .not_at_store = store_arrivals(ranks, parts_.round.store, runs_python(parts_.plan))
                            .missing.value_or(std::vector<int>{})};
    parts_.link->answer(number, mine);
    if (!hang || !parts_.round.watching()) return;
    if (!own_hang) {
      // Said here too; what follows is the lead's to decide (the round's end).
      return after_hang_read(
          mine.ranks, silent_s,
          "where this node's ranks are (the lead's console has every node's):", mine.not_at_store,
          not_at_store_line(mine.not_at_store, mine.ranks.size(), parts_.round.store),
          /*act=*/false);
    }
    parts_.link->collect(number, k_hang_read_limit + k_answer_margin,
                         [this, silent_s](const DoctorLink::ByAgent<doctor::NodeAnswer>& answers) {
                           after_nodes_read(answers, silent_s);
                         });
  };
  std::vector<StackTarget> targets = live_targets(parts_.gang);
  if (targets.empty()) return answer({});
  parts_.reader.read(targets, k_hang_read_limit, answer);
}

void HangResponse::after_nodes_read(const DoctorLink::ByAgent<doctor::NodeAnswer>& answers,
                                    double silent_for_s) {
  if (!parts_.round.watching()) return reading_ended_();
  std::vector<doctor::RankStacks> ranks;
  std::vector<int> missing;
  std::vector<std::string> unanswered;
  for (const auto& [id, answer] : answers) {
    if (!answer) {
      unanswered.push_back(parts_.round.node_name_of(id));
      continue;
    }
    ranks.insert(ranks.end(), answer->ranks.begin(), answer->ranks.end());
    missing.insert(missing.end(), answer->not_at_store.begin(), answer->not_at_store.end());
  }
  std::sort(
      ranks.begin(), ranks.end(),
      [](const doctor::RankStacks& a, const doctor::RankStacks& b) { return a.rank < b.rank; });
  std::sort(missing.begin(), missing.end());
  std::string line = not_at_store_line(missing, ranks.size(), parts_.round.store);
  if (!unanswered.empty()) {
    if (!line.empty()) line += "\n  ";
    line += fmt::format(
        "no answer within {} from the agent{} on {}: their ranks are not above",
        seconds_text(std::chrono::duration<double>(k_hang_read_limit + k_answer_margin).count()),
        unanswered.size() == 1 ? "" : "s", strings::join(unanswered, "; "));
  }
  after_hang_read(ranks, silent_for_s, "where the ranks are, the odd ones out first:", missing,
                  line);
}

// ---- telling and acting ------------------------------------------------------------

void HangResponse::after_hang_read(const std::vector<doctor::RankStacks>& ranks,
                                   double silent_for_s, const std::string& heading,
                                   std::optional<std::vector<int>> not_at_store,
                                   const std::string& store_line, bool act) {
  const config::OnHang action = parts_.plan.doctor.on_hang;
  nlohmann::json stacks = parts_.reader.tell(ranks, "hang-stacks.txt", heading, store_line);
  ++hangs_in_run_;
  found_ = report::HangFinding{.timeout_s = *parts_.plan.doctor.hang_timeout_s,
                               .silent_for_s = silent_for_s,
                               .action = on_hang_word(action),
                               .not_at_store = std::move(not_at_store),
                               .stopped = stopped_ranks(ranks),
                               .stacks = std::move(stacks),
                               .flight_recorder_dumps = std::nullopt,
                               .reported_at = std::chrono::system_clock::now()};
  if (!act) {
    // The lead acts for the whole gang; this node's record says what the job does.
    hang_acted_ = action != config::OnHang::report;
    return;
  }
  if (parts_.round.over) {
    // The lead's own ranks are done, the others' hung: stop_hung_ tells the
    // coordinator, which ends the round on every node. Else the round ended
    // (a signal, a failure) before --on-hang could act.
    if (!parts_.round.watches_others_after_end()) return reading_ended_();
    if (action == config::OnHang::report) {
      watch_->watch_again();
      return reading_ended_();
    }
    hang_acted_ = true;
    stop_hung_();
    return reading_ended_();
  }
  int asked = parts_.recorder ? parts_.recorder->request_dumps() : 0;
  if (asked > 0) {
    spdlog::warn("asked {} rank{} for the NCCL flight recorder's dump", asked,
                 asked == 1 ? "" : "s");
  }
  act_on_hang(asked, HangWatch::Clock::now());
}

void HangResponse::act_on_hang(int dumps_asked, HangWatch::Clock::time_point asked_at) {
  // A rank's watchdog looks at its pipe about once a second; a dump that has
  // not come after a few is not waited for any longer.
  constexpr auto k_dump_wait = std::chrono::seconds(5);
  constexpr auto k_dump_poll = std::chrono::milliseconds(100);
  if (dumps_asked > 0 && !parts_.round.over &&
      static_cast<int>(parts_.recorder->dumps().size()) < dumps_asked &&
      HangWatch::Clock::now() - asked_at < k_dump_wait) {
    dump_wait_.expires_after(k_dump_poll);
    dump_wait_.async_wait([this, dumps_asked, asked_at](const boost::system::error_code& error) {
      if (!error) act_on_hang(dumps_asked, asked_at);
    });
    return;
  }
  if (parts_.round.over) return reading_ended_();
  if (dumps_asked > 0 && found_) found_->flight_recorder_dumps = parts_.recorder->dumps();
  const config::OnHang action = parts_.plan.doctor.on_hang;
  hang_acted_ = true;
  switch (action) {
    case config::OnHang::report:
      spdlog::warn("--on-hang report: the workers go on; watching for the next {} of silence",
                   seconds_text(*parts_.plan.doctor.hang_timeout_s));
      if (watch_ && parts_.round.watches_whole_gang()) watch_->watch_again();
      return;
    case config::OnHang::stop:
      spdlog::warn("--on-hang stop: stopping the workers (gangrun exits with {})",
                   exit_codes::k_hang);
      return stop_hung_();
    case config::OnHang::restart:
      spdlog::warn(
          "--on-hang restart: stopping the workers (they start again while --max-restarts "
          "allows)");
      return stop_hung_();
  }
}

void HangResponse::add_marks(LiveMarks& marks) const {
  marks.hang_reported = marks.hang_reported || found_.has_value();
  marks.hangs += hangs_in_run_;
}

}  // namespace gangrun::doctor
