// The run-wide store keys of the rendezvous (store/key_spaces.hpp: they
// survive rounds and workers never reach them). Agents write join, failed
// and result; the coordinator writes round, end and latest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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
// The number of the latest round message, as decimal text.
inline std::string latest() { return std::string(k_prefix) + "latest"; }
// Round r's message: a RoundPlan, or the job's outcome.
inline std::string round(std::uint64_t r) {
  return std::string(k_prefix) + "round/" + std::to_string(r);
}
// Round r is ending: a RoundEnd.
inline std::string end(std::uint64_t r) {
  return std::string(k_prefix) + "end/" + std::to_string(r);
}
// An agent's first failure in round r, sent the moment it happens.
inline std::string failed(std::uint64_t r, const std::string& agent) {
  return std::string(k_prefix) + "failed/" + std::to_string(r) + "/" + agent;
}
// How an agent's workers ended in round r.
inline std::string result(std::uint64_t r, const std::string& agent) {
  return std::string(k_prefix) + "result/" + std::to_string(r) + "/" + agent;
}

}  // namespace gangrun::rendezvous::keys
