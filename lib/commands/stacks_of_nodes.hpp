// `gangrun stacks` on a job of several nodes: every node's agent is asked
// through the job's store (doctor/node_requests.hpp) to read its own ranks,
// and their answers are merged here. Each agent reads its own workers, so
// this also works where Yama's ptrace_scope 1 keeps another terminal's
// py-spy from them.
#pragma once

#include "doctor/job_registry.hpp"
#include "doctor/stack_groups.hpp"
#include "rendezvous/signing.hpp"
#include "store/client.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace gangrun::commands {

struct NodesStacks {
  std::vector<doctor::RankStacks> ranks;  // every rank read, in rank order
  // "node 1 (host2)" for each node whose agent did not answer in time.
  std::vector<std::string> unanswered;
};

// A key's value, opened with signer: an error when the key is not in the
// store or its seal is not the signer's. `gangrun stacks` and top read the
// coordinator's keys and the nodes' answers so.
Expected<std::string> read_sealed(store::Client& client, const rendezvous::Signer& signer,
                                  const std::string& key);

// Fails with ErrorCode::store when the store cannot be reached or no round
// runs (the job is starting, between rounds, or ending).
Expected<NodesStacks> read_every_node(const doctor::RegisteredJob& job);

}  // namespace gangrun::commands
