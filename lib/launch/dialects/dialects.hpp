// The worker side of each launcher gangrun speaks, behind the one interface
// the plan calls. torchrun's conventions are every worker's base
// (torchrun.hpp); accelerate's (accelerate.hpp) and deepspeed's
// (deepspeed.hpp, deepspeed_cores.hpp, deepspeed_pid_file.hpp) are added
// when the command line spoke that tool. OMP_NUM_THREADS, which each of
// them sets its own way, is decided in one place (omp_threads.hpp).
//
// The plan asks twice: once when it is made, for what is fixed for the run
// (each worker's argv and the CPUs it is pinned to: worker_starts), and for
// each worker of each round, for its variables (worker_variables.hpp).
#pragma once

#include "config/accelerate/accelerate_settings.hpp"
#include "config/deepspeed/deepspeed_settings.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace gangrun::launch {

// What the tools' own flags asked of the workers, resolved from the options
// once (make_plan). Plain values; the plan holds them.
struct Dialects {
  config::AccelerateSettings accelerate;  // .active: the line spoke accelerate
  config::DeepspeedSettings deepspeed;    // .launch_style, core binding, --save_pid
  // The words after the script on the command line: deepspeed puts
  // --local_rank=N before them.
  std::size_t script_arguments = 0;
};

Dialects dialects_from(const config::Options& options);

// What a worker starts with, fixed for the run.
struct WorkerStart {
  std::vector<std::string> argv;  // the program's argv as this worker's tools give it
  std::vector<int> cpus;          // the CPUs it is pinned to; empty: gangrun's own affinity
};

// Each local worker's start, in local-rank order, from the program's argv
// (${local_rank} not yet substituted). Reads this host's cores only under
// --bind_cores_to_rank. Usage errors from the core binding
// (deepspeed_cores.hpp).
Expected<std::vector<WorkerStart>> worker_starts(const Dialects& dialects,
                                                 const std::vector<std::string>& program_argv,
                                                 int local_workers);

}  // namespace gangrun::launch
