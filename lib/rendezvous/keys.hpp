// The run-wide store keys of the rendezvous (store/key_spaces.hpp: they
// survive rounds and workers never reach them). Agents write join, alive,
// failed and result; the coordinator writes nonce, welcome, round (with its
// brief and assignments), end, latest and waiting, and the store refuses those to every client
// (coordinator_only_prefixes).
// Every value is sealed with the job's secret (signing.hpp).
//
// The key grammar lives here alone: the functions below build the keys, and
// parse() (keys.cpp) reads back the ones agents and askers write, so no
// other file cuts a key apart (tests/integration/test_one_owner.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::rendezvous::keys {

inline constexpr std::string_view k_prefix = "gangrun/run/rdzv/";

// An agent's AgentInfo; the connection that wrote it is the agent's link.
inline std::string join(const std::string& agent) {
  return std::string(k_prefix) + "join/" + agent;
}
// The coordinator's answer to a join: empty when the agent is in, else why
// it is turned away.
inline std::string welcome(const std::string& agent) {
  return std::string(k_prefix) + "welcome/" + agent;
}
// The job's nonce (signing.hpp), published when the coordinator starts;
// every agent reads it before it joins.
inline std::string nonce() { return std::string(k_prefix) + "nonce"; }
// The number of the latest round message, as decimal text.
inline std::string latest() { return std::string(k_prefix) + "latest"; }
// Round r's message: a RoundPlan, or the job's outcome.
inline std::string round(std::uint64_t r) {
  return std::string(k_prefix) + "round/" + std::to_string(r);
}
// What every agent waits for: round r has formed (a RoundFormed), or the
// job's outcome; published after every node's assignment and before
// round(r). Only the round's lead, `gangrun top` and `gangrun stacks` read
// the whole plan in round(r): read by every node, it would cost the store
// N x N bytes a round.
inline std::string round_brief(std::uint64_t r) { return round(r) + "/brief"; }
// Agent's place in round r: an Assignment; none for an agent the round
// leaves out (a spare). Deleted when the next round or the outcome comes.
inline std::string assignment(std::uint64_t r, const std::string& agent) {
  return round(r) + "/node/" + agent;
}
// Round r is ending: a RoundEnd.
inline std::string end(std::uint64_t r) {
  return std::string(k_prefix) + "end/" + std::to_string(r);
}
// An agent's first failure in round r, sent the moment it happens.
inline std::string failed(std::uint64_t r, const std::string& agent) {
  return std::string(k_prefix) + "failed/" + std::to_string(r) + "/" + agent;
}
// An agent's heartbeat: a counter its loop writes every keep-alive
// interval, which proves the agent (not only its kernel) is alive.
inline std::string alive(const std::string& agent) {
  return std::string(k_prefix) + "alive/" + agent;
}
// Written by each of an agent's other connections to the store (its waits,
// the gang doctor's two) as their first word, under a random token of the
// connection's own: the coordinator protects the connection that wrote it
// first (store::Server::protect), so that no storm of strangers' connections
// can take its place.
inline std::string connection(const std::string& agent, const std::string& token) {
  return std::string(k_prefix) + "conn/" + agent + "/" + token;
}
// What the coordinator waits for ("node rank 2 to join ..."), rewritten
// every 10 s; empty when it waits for nothing.
inline std::string waiting() { return std::string(k_prefix) + "waiting"; }
// How an agent's workers ended in round r.
inline std::string result(std::uint64_t r, const std::string& agent) {
  return std::string(k_prefix) + "result/" + std::to_string(r) + "/" + agent;
}

// The gang doctor's requests to every node of a round (read every rank's
// stack): whoever asks (the round's lead, `gangrun stacks`) writes an ask
// under a random id of its own, sealed (with the job's secret, or the
// stacks key derived from it); the coordinator numbers the asks it believes
// and publishes each as a request, so that no client can write, shift or
// skip a request number. Each node waits for request 1, 2, ... of the round.
// The answers and the silences are doctor/node_requests.hpp's.
inline constexpr std::string_view k_doctor_prefix = "gangrun/run/doctor/";
inline std::string doctor_ask(std::uint64_t round, const std::string& ask_id) {
  return std::string(k_doctor_prefix) + "ask/" + std::to_string(round) + "/" + ask_id;
}
// The request an ask became: its number, as decimal text.
inline std::string doctor_asked(const std::string& ask_id) {
  return std::string(k_doctor_prefix) + "asked/" + ask_id;
}
inline std::string doctor_request(std::uint64_t round, std::int64_t number) {
  return std::string(k_doctor_prefix) + "request/" + std::to_string(round) + "/" +
         std::to_string(number);
}
// A request's keys (and the nodes' answers to it) stay in the store while it
// is among the latest this many: the coordinator deletes its own keys of
// request n - k_doctor_requests_kept when it numbers request n, and each node
// its answer to it when it answers n. At the coordinator's 2 requests a
// second that is 32 s, more than any asker waits for answers, so the store
// holds a bounded number of them however long `gangrun top` stays open.
inline constexpr std::int64_t k_doctor_requests_kept = 64;

// The keys only the coordinator writes (through store::Server::publish).
inline std::vector<std::string> coordinator_only_prefixes() {
  std::string prefix(k_prefix);
  std::string doctor(k_doctor_prefix);
  return {prefix + "welcome/", prefix + "latest",   prefix + "round/",
          prefix + "end/",     prefix + "waiting",  prefix + "nonce",
          doctor + "asked/",   doctor + "request/", doctor + "requests/"};
}

// What a key written by a client names, read back by the coordinator.
enum class Kind {
  join,          // join(agent)
  connection,    // connection(agent, token)
  alive,         // alive(agent)
  failed,        // failed(round, agent)
  result,        // result(round, agent)
  other_rdzv,    // any other key under k_prefix (the coordinator's own, or unknown)
  doctor_ask,    // doctor_ask(round, ask_id)
  other_doctor,  // any other key under k_doctor_prefix
  foreign,       // outside both prefixes: not the rendezvous' business
};

struct ParsedKey {
  Kind kind = Kind::foreign;
  // join: the id the key claims (everything after "join/", whatever it
  // holds); connection, alive: the agent; failed, result: the agent after
  // the round; doctor_ask: the ask id after the round.
  std::string agent = {};
  // failed, result, doctor_ask: the round, when "<round>/" reads (decimal
  // digits, at least one, then '/'); nullopt when it does not.
  std::optional<std::uint64_t> round = {};
  // connection: the token after the agent's '/'; nullopt when the key names
  // no token.
  std::optional<std::string> token = {};
  bool operator==(const ParsedKey&) const = default;
};

// Reads any key; never fails (a key that does not fit the grammar of its
// kind keeps its kind, with round or token unset, so that the coordinator
// can say what was wrong with it).
ParsedKey parse(std::string_view key);

}  // namespace gangrun::rendezvous::keys
