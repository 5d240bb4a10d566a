// The round as the gang doctor's parts see it (gang_doctor.hpp): which
// nodes take part, whether this node's ranks are done, and so whether the
// round is still this node's to watch and read. The doctor alone changes
// it; the hang's response (hang_response.hpp) and the silence exchange
// (silence_exchange.hpp) read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

// A round of a multi-node job, as the doctor needs it.
struct NodeRound {
  std::uint64_t round = 0;
  // Every node's agent id on the lead; only this node's elsewhere (a node
  // reads its own place in the round, not the whole plan: rendezvous/keys.hpp).
  std::vector<std::string> members;
  int node_count = 0;
  // Each member's node as messages name it (rendezvous::node_name), by
  // agent id.
  std::map<std::string, std::string> names;
  bool lead = false;      // this node watches the whole gang
  std::string job_nonce;  // what the job's messages are sealed for
};

struct DoctorRound {
  bool hang_watched = false;  // --hang-timeout is set (for every round)
  // Per round.
  std::optional<NodeRound> nodes;  // several nodes
  std::string store;               // "host:port" the workers meet at; empty when unknown
  std::chrono::steady_clock::time_point start;
  bool over = false;     // this node's ranks are done
  bool goes_on = false;  // across nodes: until the coordinator ends the round everywhere

  // This node's watch covers the whole gang: it is the only node, or the
  // round's lead (the others only tell it their silence).
  bool watches_whole_gang() const { return !nodes || nodes->lead; }
  // The lead's own ranks are done, the other nodes' still run: it goes on
  // watching their silence and, on a hang, asks them and prints where they
  // are (they act on --on-hang themselves).
  bool watches_others_after_end() const {
    return over && goes_on && nodes && nodes->lead && hang_watched;
  }
  // The round is this node's to watch and read: its ranks run, or it is the
  // lead watching the others after its own.
  bool watching() const { return !over || watches_others_after_end(); }
  // The node of a member of this round as messages name it; the id itself
  // for one the round does not list.
  std::string node_name_of(const std::string& agent_id) const {
    if (!nodes) return agent_id;
    auto name = nodes->names.find(agent_id);
    return name == nodes->names.end() ? agent_id : name->second;
  }
};

}  // namespace gangrun::doctor
