#include "commands/top_of_nodes.hpp"

#include "commands/stacks_of_nodes.hpp"
#include "doctor/node_requests.hpp"
#include "rendezvous/keys.hpp"
#include "rendezvous/messages.hpp"
#include "util/printable_within.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace gangrun::commands {

namespace {

// A number of the snapshot that the frame shows: finite, within [low, high].
void check_range(double value, double low, double high, const char* name) {
  if (!std::isfinite(value) || value < low || value > high) {
    throw std::runtime_error(fmt::format("{} is not between {} and {}", name, low, high));
  }
}

void check_text(std::string& text, std::size_t max_size, const char* name) {
  auto shown = strings::printable_within(text, max_size);
  if (!shown) throw std::runtime_error(std::string(name) + " " + std::string(shown.error()));
  text = std::move(*shown);
}

constexpr double k_a_year_s = 365.0 * 24 * 3600;
constexpr std::size_t k_max_ranks_per_node = 1 << 16;

void check_rank(const observe::RankStatus& rank) {
  check_range(rank.rank, 0, rendezvous::k_max_ranks, "rank");
  check_range(rank.local_rank, 0, rendezvous::k_max_local_world_size, "local_rank");
  check_range(static_cast<double>(rank.pid), -1, 1 << 30, "pid");
  check_range(rank.cpu_seconds, 0, 1e12, "cpu_seconds");
  check_range(static_cast<double>(rank.rss_kib), 0, 1e12, "rss_kib");
  check_range(rank.seconds_since_progress, 0, 100 * k_a_year_s, "seconds_since_progress");
  if (rank.seconds_since_output) {
    check_range(*rank.seconds_since_output, 0, 100 * k_a_year_s, "seconds_since_output");
  }
  if (rank.steps_per_second) check_range(*rank.steps_per_second, 0, 1e9, "steps_per_second");
  if (rank.gpu_utilization) check_range(*rank.gpu_utilization, 0, 100, "gpu_utilization");
  if (rank.gpu_memory_bytes) {
    check_range(static_cast<double>(*rank.gpu_memory_bytes), 0, 1e15, "gpu_memory_bytes");
  }
}

std::string outcome_text(const rendezvous::JobOutcome& outcome) {
  std::string text = fmt::format("the job ended: exit code {}", outcome.exit_code);
  if (!outcome.message.empty()) text += ": " + strings::printable(outcome.message);
  return text;
}

}  // namespace

Expected<observe::NodeStatus> status_from_answer(const std::string& text) {
  if (text.size() > k_max_status_bytes) {
    return fail(ErrorCode::store, fmt::format("a node's status of {} bytes (at most {})",
                                              text.size(), k_max_status_bytes));
  }
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return fail(ErrorCode::store, "a node's status is not a JSON object");
  std::optional<observe::NodeStatus> status = observe::node_status_from_json(json);
  if (!status) {
    return fail(ErrorCode::store, "a node's status lacks a field or has one of the wrong type");
  }
  try {
    check_text(status->run_id, 256, "run_id");
    check_text(status->node, 256, "node");
    check_text(status->agent_state, 32, "agent_state");
    check_range(status->collected_at, 0, 1e11, "collected_at");
    check_range(status->restarts, 0, 1e9, "restarts");
    check_range(status->nodes_in_round, 0, 1e9, "nodes_in_round");
    if (status->ranks.size() > k_max_ranks_per_node) {
      throw std::runtime_error(
          fmt::format("{} ranks (at most {})", status->ranks.size(), k_max_ranks_per_node));
    }
    for (const observe::RankStatus& rank : status->ranks) check_rank(rank);
  } catch (const std::runtime_error& bad) {
    return fail(ErrorCode::store, std::string("a node's status: ") + bad.what());
  }
  return std::move(*status);
}

namespace {

store::ClientSettings settings_for(const doctor::RegisteredJob& job) {
  store::ClientSettings settings;
  settings.host = job.nodes->store_host;
  settings.port = job.nodes->store_port;
  settings.connect_timeout = std::chrono::seconds(5);
  settings.timeout = std::chrono::seconds(10);
  return settings;
}

}  // namespace

JobEndWatch::JobEndWatch(const doctor::RegisteredJob& job)
    : thread_([this, job](const std::stop_token& stop) {
        watch(stop, job);
        std::lock_guard lock(mutex_);
        finished_ = true;
        over_.notify_all();
      }) {}

std::optional<std::string> JobEndWatch::outcome_within(std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  over_.wait_for(lock, limit, [this] { return finished_; });
  return outcome_;
}

std::optional<std::string> JobEndWatch::outcome() const {
  std::lock_guard lock(mutex_);
  return outcome_;
}

void JobEndWatch::watch(const std::stop_token& stop, doctor::RegisteredJob job) {
  // Short waits, so that a stop is noticed soon.
  constexpr std::chrono::milliseconds k_wait{300};
  const rendezvous::Signer published(std::nullopt, job.run_id);
  std::optional<store::Client> client;
  std::optional<std::uint64_t> round;  // the latest round seen
  auto outcome_in = [&](const std::string& key) {
    auto value = client->get(key);
    auto message =
        value ? published.open(key, *value) : Expected<std::string>(tl::unexpected(value.error()));
    auto next = message ? rendezvous::next_from_json(*message)
                        : Expected<rendezvous::Next>(tl::unexpected(message.error()));
    if (!next) return false;
    if (const auto* outcome = std::get_if<rendezvous::JobOutcome>(&*next)) {
      std::lock_guard lock(mutex_);
      outcome_ = outcome_text(*outcome);
      return true;
    }
    return false;
  };
  while (!stop.stop_requested()) {
    if (!client) {
      auto connected = store::Client::connect(settings_for(job));
      if (!connected) return;  // the store is gone: the end, if any, was missed
      client.emplace(std::move(*connected));
    }
    if (!round) {
      auto latest = read_sealed(*client, published, rendezvous::keys::latest());
      std::optional<std::int64_t> number = latest ? strings::parse_int(*latest) : std::nullopt;
      if (!number || *number < 0) {
        std::this_thread::sleep_for(k_wait);
        continue;
      }
      round = static_cast<std::uint64_t>(*number);
      if (outcome_in(rendezvous::keys::round(*round))) return;
    }
    // The next round's message, read the moment it comes: another round, or the job's end
    // (after which the agents, and with them the store, go at once).
    std::string following = rendezvous::keys::round(*round + 1);
    if (client->wait({following}, k_wait)) {
      if (outcome_in(following)) return;
      ++*round;
    } else if (!client->check({following})) {
      client.reset();
    }
  }
}

Expected<NodeStatusReader> NodeStatusReader::connect(const doctor::RegisteredJob& job) {
  GANGRUN_TRY_ASSIGN(client, store::Client::connect(settings_for(job)));
  return NodeStatusReader(job, std::move(*client));
}

Expected<void> NodeStatusReader::reconnect() {
  GANGRUN_TRY_ASSIGN(client, store::Client::connect(settings_for(job_)));
  client_ = std::move(*client);
  return {};
}

Expected<TopReading> NodeStatusReader::read(std::chrono::milliseconds limit) {
  // What the coordinator publishes no client can write (rendezvous/keys.hpp):
  // read as it is. The ask and the answers are sealed with the stacks key.
  const rendezvous::Signer published(std::nullopt, job_.run_id);
  rendezvous::Signer signer(job_.nodes->stacks_key, job_.run_id);
  auto not_running = [](const std::string& why) {
    return fail(ErrorCode::io, "no round of the job runs now (" + why + ")");
  };
  auto nonce = read_sealed(client_, published, rendezvous::keys::nonce());
  if (!nonce) return not_running(nonce.error().message());
  signer.bind_to_job(*nonce);
  auto latest = read_sealed(client_, published, rendezvous::keys::latest());
  if (!latest) return not_running(latest.error().message());
  std::optional<std::int64_t> latest_round = strings::parse_int(*latest);
  if (!latest_round || *latest_round < 0) return not_running("the latest round is not a number");
  auto round = static_cast<std::uint64_t>(*latest_round);
  auto message = read_sealed(client_, published, rendezvous::keys::round(round));
  if (!message) return not_running(message.error().message());
  GANGRUN_TRY_ASSIGN(next, rendezvous::next_from_json(*message));
  if (const auto* outcome = std::get_if<rendezvous::JobOutcome>(&*next)) {
    return TopReading{.view = std::nullopt, .ended = outcome_text(*outcome)};
  }
  const auto& plan = std::get<rendezvous::RoundPlan>(*next);

  std::string ask_id = rendezvous::new_job_nonce();
  std::string ask_key = rendezvous::keys::doctor_ask(round, ask_id);
  GANGRUN_TRY(client_.set(ask_key, signer.seal(ask_key, doctor::to_json(doctor::NodeRequest{
                                                            .why = doctor::NodeRequest::Why::status,
                                                            .silent_for_s = 0,
                                                            .ask_id = ask_id}))));
  std::string asked_key = rendezvous::keys::doctor_asked(ask_id);
  if (!client_.wait({asked_key}, limit)) {
    return fail(ErrorCode::io,
                "the job's coordinator did not take the request (the round ended, requests came "
                "faster than it takes them, or this job's secret has changed)");
  }
  auto asked = read_sealed(client_, published, asked_key);
  std::optional<std::int64_t> number = asked ? strings::parse_int(*asked) : std::nullopt;
  if (!number || *number <= 0) return fail(ErrorCode::store, asked_key + " is not a number");
  std::vector<std::string> keys;
  for (const rendezvous::Member& member : plan.members) {
    keys.push_back(doctor::node_keys::status(round, *number, member.id));
  }
  (void)client_.wait(keys, limit);  // all of them, or whatever came within the limit

  TopView view{.run_id = job_.run_id, .nodes = {}, .unanswered = {}};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto text = read_sealed(client_, signer, keys[i]);
    auto status = text ? status_from_answer(*text)
                       : Expected<observe::NodeStatus>(tl::unexpected(text.error()));
    if (!status) {
      view.unanswered.push_back(rendezvous::node_name(plan.members[i]));
      continue;
    }
    view.nodes.push_back(std::move(*status));
  }
  return TopReading{.view = std::move(view), .ended = std::nullopt};
}

}  // namespace gangrun::commands
