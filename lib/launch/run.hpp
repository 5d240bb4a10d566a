// Transitional: the run moved to the node agent (agent/node_agent.hpp).
#pragma once

#include "agent/node_agent.hpp"

namespace gangrun::launch {

using RunResult = agent::RunResult;
inline RunResult run(const LaunchPlan& plan) { return agent::run(plan); }

}  // namespace gangrun::launch
