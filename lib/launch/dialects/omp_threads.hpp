// OMP_NUM_THREADS, which torchrun, accelerate and deepspeed each set their
// own way, decided in one place, with the message that tells the user what
// each worker gets. Whose rule applies, the first that does:
//   a worker pinned to cores (--bind_cores_to_rank): the size of its share,
//     over an inherited value too, as deepspeed sets it;
//   accelerate's line (not under --use_deepspeed): --num_cpu_threads_per_process,
//     else the inherited value, else (--cpu) the physical cores shared among
//     the processes, else 1 (dialects/accelerate.hpp);
//   torchrun's: the inherited value, else 1 when there are several workers,
//     else unset. Workers pinned by --numa_binding follow it too, as under
//     torchrun, whose binding leaves OMP_NUM_THREADS alone.
#pragma once

#include "launch/plan.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

struct OmpThreads {
  std::optional<std::string> value;  // nullopt: not set
  // Why gangrun chose it, with how to tune it; empty when the value is the
  // user's own (inherited, or asked for with a flag) or unset.
  std::string why;
};

// What the worker's OMP_NUM_THREADS is (worker_variables sets it).
OmpThreads omp_threads(const LaunchPlan& plan, const WorkerPlan& worker);

// What gangrun tells the user about OMP_NUM_THREADS before starting the
// workers of this node ("OMP_NUM_THREADS is unset; setting it to 1 for each
// of the 4 workers (set it yourself to tune)"); nullopt when every worker
// gets the user's own value, or none.
std::optional<std::string> omp_threads_message(const LaunchPlan& plan);

}  // namespace gangrun::launch
