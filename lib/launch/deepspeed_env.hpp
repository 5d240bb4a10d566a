// What deepspeed's launcher (deepspeed/launcher/launch.py) gives its workers
// beyond torchrun's conventions, from Options::deepspeed: the --local_rank=N
// argument and LOCAL_SIZE, CROSS_RANK, CROSS_SIZE with --launch_style
// deepspeed, and OMP_NUM_THREADS for a worker pinned to its cores.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

#include <string>
#include <vector>

namespace gangrun::launch {

// argv (the worker's command line) with --local_rank=N put between the
// script and its arguments, as deepspeed does, when the launch style is
// deepspeed and --no_local_rank is not given; else argv unchanged.
// plan.options.program_and_args tells where the script's arguments begin.
std::vector<std::string> deepspeed_argv(const LaunchPlan& plan, std::vector<std::string> argv,
                                        int local_rank);

// Adds to (or overrides in) vars what deepspeed would set for this worker:
// with --launch_style deepspeed, LOCAL_SIZE (workers on this node),
// CROSS_RANK (the node's rank) and CROSS_SIZE (nodes); for a worker pinned
// to cores, OMP_NUM_THREADS as the number of its cores. worker_variables()
// (plan.hpp) calls it last.
void add_deepspeed_variables(const LaunchPlan& plan, const WorkerPlan& worker,
                             const RoundAssignment& round, EnvMap& vars);

}  // namespace gangrun::launch
