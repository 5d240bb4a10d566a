// What a round starts with on this node, from the plan and the round's
// assignment: the gang's settings for the run, and every worker's launch
// with the variables the gang doctor and the round's network add.
#pragma once

#include "launch/plan.hpp"
#include "supervise/gang.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::agent {

// The gang's timeouts from the plan (on_failure left to the agent). On
// many nodes the failure window is longer by the rendezvous' keep-alive
// limit: the coordinator closes it for every node at once (the round's
// end), and this node closes it by itself only if that word never comes.
supervise::GangSettings gang_settings(const launch::LaunchPlan& plan);

// agent/launches.hpp's launches of round in run_dir, each worker's
// environment then given doctor_env (GangDoctor::worker_env) and last
// network_env (agent/round_network.hpp), which win over what came before.
std::vector<supervise::WorkerLaunch> round_launches(const launch::LaunchPlan& plan,
                                                    const launch::RoundAssignment& round,
                                                    const std::string& run_dir,
                                                    const EnvMap& doctor_env,
                                                    const EnvMap& network_env);

// The store the round's workers meet at, as the gang doctor takes it
// ("host:port"; empty when the round names no port).
std::string round_store_endpoint(const launch::RoundAssignment& round);

}  // namespace gangrun::agent
