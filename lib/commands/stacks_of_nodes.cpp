#include "commands/stacks_of_nodes.hpp"

#include "doctor/node_requests.hpp"
#include "rendezvous/keys.hpp"
#include "rendezvous/messages.hpp"
#include "rendezvous/signing.hpp"
#include "store/client.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gangrun::commands {

namespace {

// Every agent reads its ranks within its own limit (5 s) once the request
// reaches it (within its wait's 2 s); a loaded node gets some more.
constexpr std::chrono::seconds k_answers_limit{12};
// Answers one MULTI_GET reads: a few megabytes a reply, far below the
// store's max_reply_bytes.
constexpr std::size_t k_answers_per_read = 256;

// The answers under keys, in their order (an error: none, or not sealed for this job).
// When every key is there (the wait saw them all), MULTI_GETs of a few
// hundred keys, a few round trips for thousands of nodes; else one key after
// another, since a PyTorch server before the libuv one drops a connection
// whose MULTI_GET names a missing key.
std::vector<Expected<std::string>> read_answers(store::Client& client,
                                                const rendezvous::Signer& signer,
                                                const std::vector<std::string>& keys,
                                                bool all_there) {
  std::vector<Expected<std::string>> texts;
  for (std::size_t first = 0; all_there && first < keys.size(); first += k_answers_per_read) {
    std::size_t end = std::min(keys.size(), first + k_answers_per_read);
    std::vector<std::string> batch(keys.begin() + static_cast<std::ptrdiff_t>(first),
                                   keys.begin() + static_cast<std::ptrdiff_t>(end));
    auto values = client.multi_get(batch);
    if (!values || values->size() != batch.size()) {
      texts.clear();
      break;
    }
    for (std::size_t i = 0; i < batch.size(); ++i)
      texts.push_back(signer.open(batch[i], (*values)[i]));
  }
  if (texts.size() == keys.size()) return texts;
  texts.clear();
  for (const std::string& key : keys) texts.push_back(read_sealed(client, signer, key));
  return texts;
}

}  // namespace

Expected<std::string> read_sealed(store::Client& client, const rendezvous::Signer& signer,
                                  const std::string& key) {
  GANGRUN_TRY_ASSIGN(exists, client.check({key}));
  if (!*exists) return fail(ErrorCode::store, key + " is not in the store");
  GANGRUN_TRY_ASSIGN(value, client.get(key));
  return signer.open(key, *value);
}

Expected<NodesStacks> read_every_node(const doctor::RegisteredJob& job) {
  const doctor::RegisteredJob::Nodes& nodes = *job.nodes;
  store::ClientSettings settings;
  settings.host = nodes.store_host;
  settings.port = nodes.store_port;
  settings.connect_timeout = std::chrono::seconds(5);
  settings.timeout = k_answers_limit + std::chrono::seconds(5);
  GANGRUN_TRY_ASSIGN(client, store::Client::connect(settings));
  // What the coordinator publishes no client can write (rendezvous/keys.hpp):
  // read as it is. What this command writes and the nodes answer is sealed
  // with the stacks key, for this job's nonce.
  const rendezvous::Signer published(std::nullopt, job.run_id);
  rendezvous::Signer signer(nodes.stacks_key, job.run_id);

  // The running round and its nodes.
  auto not_running = [](const std::string& why) {
    return fail(ErrorCode::io, "stacks: no round of the job runs now (" + why +
                                   "): it is starting, between rounds, or ending; ask again "
                                   "in a moment");
  };
  auto nonce = read_sealed(*client, published, rendezvous::keys::nonce());
  if (!nonce) return not_running(nonce.error().message());
  signer.bind_to_job(*nonce);
  auto latest = read_sealed(*client, published, rendezvous::keys::latest());
  if (!latest) return not_running(latest.error().message());
  std::optional<std::int64_t> latest_round = strings::parse_int(*latest);
  if (!latest_round || *latest_round < 0) return not_running("the latest round is not a number");
  auto round = static_cast<std::uint64_t>(*latest_round);
  auto message = read_sealed(*client, published, rendezvous::keys::round(round));
  if (!message) return not_running(message.error().message());
  GANGRUN_TRY_ASSIGN(next, rendezvous::next_from_json(*message));
  const auto* plan = std::get_if<rendezvous::RoundPlan>(&*next);
  if (!plan) return not_running("the job has ended");

  // The coordinator numbers the ask; its number says which answers are ours.
  std::string ask_id = rendezvous::new_job_nonce();
  std::string ask_key = rendezvous::keys::doctor_ask(round, ask_id);
  GANGRUN_TRY(client->set(ask_key, signer.seal(ask_key, doctor::to_json(doctor::NodeRequest{
                                                            .why = doctor::NodeRequest::Why::asked,
                                                            .silent_for_s = 0,
                                                            .ask_id = ask_id}))));
  std::string asked_key = rendezvous::keys::doctor_asked(ask_id);
  if (!client->wait({asked_key}, k_answers_limit)) {
    return fail(ErrorCode::io,
                "stacks: the job's coordinator did not take the request (the round ended, "
                "another request came just before, or this job's secret has changed); ask "
                "again in a moment");
  }
  auto asked = read_sealed(*client, published, asked_key);
  std::optional<std::int64_t> number = asked ? strings::parse_int(*asked) : std::nullopt;
  if (!number || *number <= 0)
    return fail(ErrorCode::store, "stacks: " + asked_key + " is not a number");
  std::vector<std::string> keys;
  for (const rendezvous::Member& member : plan->members) {
    keys.push_back(doctor::node_keys::answer(round, *number, member.id));
  }
  // All of them, or whatever came within the limit.
  bool all_there = client->wait(keys, k_answers_limit).has_value();
  std::vector<Expected<std::string>> texts = read_answers(*client, signer, keys, all_there);

  NodesStacks found;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const rendezvous::Member& member = plan->members[i];
    const Expected<std::string>& text = texts[i];
    auto answer = text ? doctor::node_answer_from_json(*text)
                       : Expected<doctor::NodeAnswer>(tl::unexpected(text.error()));
    if (!answer) {
      found.unanswered.push_back(rendezvous::node_name(member));
      continue;
    }
    found.ranks.insert(found.ranks.end(), answer->ranks.begin(), answer->ranks.end());
  }
  std::sort(
      found.ranks.begin(), found.ranks.end(),
      [](const doctor::RankStacks& a, const doctor::RankStacks& b) { return a.rank < b.rank; });
  return found;
}

}  // namespace gangrun::commands
