// What deepspeed's launcher (deepspeed/launcher/launch.py) gives its workers
// beyond torchrun's conventions: the --local_rank=N argument and LOCAL_SIZE,
// CROSS_RANK, CROSS_SIZE with --launch_style deepspeed. Its core binding is
// deepspeed_cores.hpp, its --save_pid file deepspeed_pid_file.hpp, and the
// OMP_NUM_THREADS of a pinned worker is decided in omp_threads.hpp.
#pragma once

#include "launch/dialects/dialects.hpp"
#include "launch/plan.hpp"
#include "util/env.hpp"

#include <string>
#include <vector>

namespace gangrun::launch {

// argv (the worker's command line) with --local_rank=N put between the
// script and its arguments, as deepspeed does, when the launch style is
// deepspeed and --no_local_rank is not given; else argv unchanged.
// dialects.script_arguments tells where the script's arguments begin.
std::vector<std::string> deepspeed_argv(const Dialects& dialects, std::vector<std::string> argv,
                                        int local_rank);

// Adds to vars what deepspeed would set for every worker with --launch_style
// deepspeed: LOCAL_SIZE (workers on this node), CROSS_RANK (the node's rank)
// and CROSS_SIZE (nodes). worker_variables() calls it after accelerate's.
void add_deepspeed_variables(const LaunchPlan& plan, const RoundAssignment& round, EnvMap& vars);

}  // namespace gangrun::launch
