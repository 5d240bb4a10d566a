#include "doctor/straggler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gangrun::doctor {

namespace {

// Where the frames' file says a rank waits on the others: the collectives
// and the barrier of torch.distributed (the file names py-spy shortens to the
// package path).
bool in_distributed(const Frame& frame) {
  return frame.file.find("torch/distributed/") != std::string::npos ||
         frame.file.find("torch/nn/parallel/distributed.py") != std::string::npos;
}

// A backward pass: DistributedDataParallel's gradients are all-reduced
// during it, so a rank that finished its own part early waits there.
bool in_backward(const Frame& frame) {
  return frame.file.find("torch/autograd/") != std::string::npos &&
         frame.function.find("backward") != std::string::npos;
}

// Python's import machinery: a rank importing torch.distributed runs its
// modules' code, which waits on no one.
bool importing(const Frame& frame) {
  return frame.function == "_find_and_load" || frame.function == "_call_with_frames_removed";
}

int percent(double share) { return static_cast<int>(std::lround(share * 100)); }

bool stopped(char state) { return state == 'T' || state == 't'; }

}  // namespace

bool is_importing(const std::vector<Frame>& main_frames) {
  return std::any_of(main_frames.begin(), main_frames.end(), importing);
}

std::optional<std::string> waiting_in(const std::vector<Frame>& main_frames) {
  if (is_importing(main_frames)) return std::nullopt;
  for (const Frame& frame : main_frames) {
    if (in_distributed(frame) || in_backward(frame)) return frame.function;
  }
  return std::nullopt;
}

void StragglerTally::add(const std::vector<RankStacks>& sample, const ProcReadings& proc) {
  ++samples_;
  for (const RankStacks& rank : sample) {
    if (rank.unavailable) continue;
    const ThreadStack* main = main_thread(rank.threads, rank.pid);
    // A rank still importing has not begun to train: its sample says
    // nothing of how it keeps up.
    if (main == nullptr || is_importing(main->frames)) continue;
    Tally& tally = ranks_[rank.rank];
    tally.host = rank.host;
    ++tally.samples;
    auto read = proc.by_pid.find(rank.pid);
    // A thread waiting on the others sleeps in a futex or a socket's poll;
    // one that is stopped, on a CPU or queued for one, or in a disk wait is
    // held up by something of its own, in whatever frame it stands.
    bool asleep = true;
    if (read != proc.by_pid.end()) {
      char state = rank.stopped.value_or(read->second.state);
      asleep = state == 'S';
      ++tally.read_in_proc;
      tally.running += state == 'R';
      tally.asleep += asleep;
      tally.stopped += stopped(state);
      Timed timed{proc.at_s, read->second};
      if (!tally.first_read) tally.first_read = timed;
      tally.last_read = timed;
    } else if (rank.stopped) {
      asleep = false;
    }
    if (auto where = waiting_in(main->frames); where && asleep) {
      ++tally.waiting;
      ++tally.waited_in[*where];
    }
  }
}

double StragglerTally::waiting_share(const Tally& tally) {
  return tally.samples == 0 ? 0.0 : static_cast<double>(tally.waiting) / tally.samples;
}

double StragglerTally::state_share(const Tally& tally, int count) {
  return tally.read_in_proc == 0 ? 0.0 : static_cast<double>(count) / tally.read_in_proc;
}

std::optional<double> StragglerTally::per_second(const Tally& tally, bool run_delay) {
  if (!tally.first_read || !tally.last_read) return std::nullopt;
  double seconds = tally.last_read->at_s - tally.first_read->at_s;
  if (seconds <= 0) return std::nullopt;
  const ProcSample& first = tally.first_read->proc;
  const ProcSample& last = tally.last_read->proc;
  if (!run_delay) return (last.cpu_s - first.cpu_s) / seconds;
  if (!first.run_delay_s || !last.run_delay_s) return std::nullopt;
  return (*last.run_delay_s - *first.run_delay_s) / seconds;
}

double StragglerTally::others_waiting(int rank) const {
  std::vector<double> shares;
  for (const auto& [other, tally] : ranks_) {
    if (other != rank && tally.samples > 0) shares.push_back(waiting_share(tally));
  }
  if (shares.empty()) return 0.0;
  std::sort(shares.begin(), shares.end());
  std::size_t middle = shares.size() / 2;
  return shares.size() % 2 == 1 ? shares[middle] : (shares[middle - 1] + shares[middle]) / 2;
}

std::string StragglerTally::most_waited_in(int except_rank) const {
  std::map<std::string, int> counts;
  for (const auto& [rank, tally] : ranks_) {
    if (rank == except_rank) continue;
    for (const auto& [function, count] : tally.waited_in) counts[function] += count;
  }
  auto most = std::max_element(counts.begin(), counts.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == counts.end() ? "a collective" : most->first;
}

std::vector<int> StragglerTally::stragglers() const {
  std::vector<int> named;
  if (ranks_.size() < 2) return named;
  for (const auto& [rank, tally] : ranks_) {
    if (tally.samples < k_min_samples) continue;
    double own = waiting_share(tally);
    double others = others_waiting(rank);
    double standard_error = std::sqrt(others * (1.0 - others) / tally.samples);
    double gap = std::max(k_gap, k_standard_errors * standard_error);
    if (1.0 - own >= k_outside && others >= k_others_waiting && others - own >= gap) {
      named.push_back(rank);
    }
  }
  return named;
}

std::string StragglerTally::describe(int rank) const {
  const Tally& tally = ranks_.at(rank);
  std::string states;
  if (tally.read_in_proc > 0) {
    states =
        fmt::format(" (stopped in {}%, running in {}%", percent(state_share(tally, tally.stopped)),
                    percent(state_share(tally, tally.running)));
    if (auto cpu = per_second(tally, false)) states += fmt::format("; {}% of a CPU", percent(*cpu));
    states += ")";
  }
  return fmt::format(
      "rank {} ({}) kept the others waiting: not waiting on them in {}% of {} samples{}; the "
      "others waited in {} in a median of {}%",
      rank, tally.host, percent(1.0 - waiting_share(tally)), tally.samples, states,
      most_waited_in(rank), percent(others_waiting(rank)));
}

nlohmann::json StragglerTally::to_json() const {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& [rank, tally] : ranks_) {
    nlohmann::json entry = {{"rank", rank},
                            {"host", tally.host},
                            {"samples", tally.samples},
                            {"waiting_pct", percent(waiting_share(tally))},
                            {"waited_in", tally.waited_in}};
    if (tally.read_in_proc > 0) {
      entry["running_pct"] = percent(state_share(tally, tally.running));
      entry["asleep_pct"] = percent(state_share(tally, tally.asleep));
      entry["stopped_pct"] = percent(state_share(tally, tally.stopped));
      auto cpu = per_second(tally, false);
      auto run_delay = per_second(tally, true);
      entry["cpu_pct"] = cpu ? nlohmann::json(percent(*cpu)) : nlohmann::json();
      entry["run_delay_pct"] = run_delay ? nlohmann::json(percent(*run_delay)) : nlohmann::json();
    }
    ranks.push_back(std::move(entry));
  }
  return {{"samples", samples_}, {"ranks", std::move(ranks)}, {"stragglers", stragglers()}};
}

}  // namespace gangrun::doctor
