// The gang doctor between nodes: what the node agents of a multi-node job
// (and `gangrun stacks` on any of its hosts) write to each other through the
// job's store, in its run-wide space (store/key_spaces.hpp: workers never
// reach it), so that nothing new listens:
//
//   gangrun/run/doctor/silence/<round>/<agent>         "<count> <ms>": how long this node's
//                                                     ranks have been silent, an age, not a
//                                                     time, since the nodes' clocks need not
//                                                     agree; count goes up with every one told,
//                                                     so an older one written again is ignored
//   gangrun/run/doctor/answer/<round>/<n>/<agent>      a node's reading of request n, in the
//                                                     report's form
//   gangrun/run/doctor/status/<round>/<n>/<agent>      a node's snapshot for request n of kind
//                                                     status (observe/node_status.hpp: JSON),
//                                                     for `gangrun top`: no stack is read
//
// The requests themselves (a NodeRequest each) are numbered and published by
// the rendezvous' coordinator, which alone writes them
// (rendezvous/keys.hpp: doctor_ask, doctor_request). Silences are sealed with
// the job's secret, answers with the stacks key derived from it, so that
// `gangrun stacks`, which holds only that key, can read them
// (rendezvous/signing.hpp).
#pragma once

#include "doctor/stack_groups.hpp"
#include "util/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gangrun::doctor {

namespace node_keys {

inline std::string prefix() { return "gangrun/run/doctor/"; }
inline std::string silence(std::uint64_t round, const std::string& agent) {
  return prefix() + "silence/" + std::to_string(round) + "/" + agent;
}
inline std::string answer(std::uint64_t round, std::int64_t number, const std::string& agent) {
  return prefix() + "answer/" + std::to_string(round) + "/" + std::to_string(number) + "/" + agent;
}
inline std::string status(std::uint64_t round, std::int64_t number, const std::string& agent) {
  return prefix() + "status/" + std::to_string(round) + "/" + std::to_string(number) + "/" + agent;
}

}  // namespace node_keys

// Why every node reads its ranks: the lead found the whole gang silent
// (then every node acts on --on-hang once all have answered), or someone ran
// `gangrun stacks`; or `gangrun top` asked for every node's snapshot
// (status: answered under node_keys::status, no stack read).
// A node acts on no request: the lead stops the gang for a hang on its own
// reading of the silences, and the other nodes only answer.
struct NodeRequest {
  enum class Why { hang, asked, status };
  Why why = Why::asked;
  double silent_for_s = 0;  // a hang's, for the message
  std::string ask_id;       // the asker's own id for it (rendezvous/keys.hpp: doctor_ask)
};

std::string to_json(const NodeRequest& request);
Expected<NodeRequest> node_request_from_json(const std::string& text);

// A node's answer: its ranks as read, and those of them with no connection
// to the store (store_peers.hpp reads that from this host's /proc only).
struct NodeAnswer {
  std::vector<RankStacks> ranks;
  std::vector<int> not_at_store;
};

std::string to_json(const NodeAnswer& answer);
// Fails with ErrorCode::store on a text no agent writes; strings come back
// printable and bounded (they reach the terminal).
Expected<NodeAnswer> node_answer_from_json(const std::string& text);

}  // namespace gangrun::doctor
