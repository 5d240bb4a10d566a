// The rendezvous and store part of the plan: whether the agents meet, where
// (master_addr:master_port, or the c10d endpoint), where those values came
// from, the store's limits and the job secret that authenticates it.
#pragma once

#include "config/options.hpp"
#include "launch/plan.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace gangrun::launch {

// Sets plan.local_addr, rendezvous, store_limits, min_nnodes, c10d,
// multi_node, master_addr, master_port (29500 for many nodes when none is
// given) and their origins, and job_secret; removes the secret's variable
// from plan.host_env. Reads plan.nnodes and plan.host_env, so both are set
// first. Fails only when the job secret does not read (launch/job_secret.hpp).
Expected<void> plan_network(const config::Options& options, const EnvMap& host_env,
                            LaunchPlan& plan);

}  // namespace gangrun::launch
