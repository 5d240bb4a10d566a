// What the node agent of a multi-node run (plan.multi_node) needs from the
// plan to meet the others: whether it hosts the store, the coordinator's and
// its own participant's settings, and its reports of a round.
#pragma once

#include "launch/plan.hpp"
#include "rendezvous/coordinator.hpp"
#include "rendezvous/participant.hpp"
#include "store/async_client.hpp"
#include "store/server.hpp"
#include "supervise/gang.hpp"
#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace gangrun::agent {

// A duration option's seconds as the loop's timers take them.
std::chrono::milliseconds from_seconds(double seconds);

// Starts the store if this agent hosts the rendezvous: static, node rank 0
// (at the master port, on agent_store_bind_host's address); c10d, the agent
// that is_host names,
// or else whichever agent can listen on the endpoint's own address (the
// others there find the port taken and join it). nullptr when another agent
// hosts. A host that cannot listen is ErrorCode::store, naming the address.
Expected<std::unique_ptr<store::Server>> host_rendezvous_store(boost::asio::io_context& io,
                                                               const launch::LaunchPlan& plan);

// host_agent_id: the agent hosting the store, which a c10d round ranks first.
rendezvous::CoordinatorSettings coordinator_settings(const launch::LaunchPlan& plan,
                                                     const std::string& host_agent_id);

// This agent's introduction (a fresh id) and how it reaches the store.
rendezvous::ParticipantSettings participant_settings(const launch::LaunchPlan& plan);
// How an agent reaches the job's store (its participant, its gang doctor,
// and `gangrun stacks` through the job registry).
store::ClientSettings agent_store_client(const launch::LaunchPlan& plan);

// The round assignment of plan for this node: ranks from the round,
// attempt: the attempt directory it uses. The workers' master address is
// the store's as a number, the one this agent reached it at (store_ends;
// nullopt: as the round names it): no worker resolves a name, so a name
// that resolves differently, slowly or not at all where a worker runs
// cannot keep it from the store.
launch::RoundAssignment assignment_from(const rendezvous::RoundPlan& round,
                                        const rendezvous::Member& me, int attempt,
                                        const std::optional<store::AsyncClient::Ends>& store_ends);

// What this node reports of its workers' failures so far (its first failure,
// and every worker that ended by itself), or of a round's end.
rendezvous::NodeReport failure_report(const rendezvous::AgentInfo& me,
                                      const supervise::AttemptOutcome& so_far);
// The lead's word that the gang hung (--on-hang stop or restart), as the
// report of a node whose workers were stopped for it: sent as a failure
// when the lead's own workers are done already, so that the coordinator
// ends the round on every node.
rendezvous::NodeReport hang_report(const rendezvous::AgentInfo& me);
rendezvous::NodeReport round_report(const rendezvous::AgentInfo& me,
                                    const supervise::AttemptOutcome& outcome,
                                    bool stopped_for_round_end);

}  // namespace gangrun::agent
