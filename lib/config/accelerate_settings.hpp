// What accelerate launch's own flags and config file asked for, typed (Options::accelerate).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gangrun::config {

struct AccelerateSettings {
  // The line used accelerate's own flags or an accelerate config file; only
  // then do the workers get accelerate's variables. A torchrun-style line
  // keeps exactly torchrun's environment.
  bool active = false;
  // accelerate's simple launcher (--cpu, or no --multi_gpu, --use_deepspeed,
  // --use_fsdp, --use_megatron_lm): one process per machine, without
  // torchrun's rank and world variables.
  bool one_plain_process = false;
  // The variables accelerate launch gives every worker that are the same for
  // all of them, in the order accelerate sets them (launch/dialects/accelerate.cpp
  // adds them; OMP_NUM_THREADS and PYTHONPATH are below).
  std::vector<std::pair<std::string, std::string>> variables;
  // OMP_NUM_THREADS: set when accelerate sets it (not under --use_deepspeed).
  bool sets_omp_threads = false;
  std::optional<int> cpu_threads_per_process;  // --num_cpu_threads_per_process
  // With --cpu and no OMP_NUM_THREADS inherited: the physical cores divided
  // among this many processes per machine, when that is more than 1.
  std::optional<int> split_physical_cores_among;
  // --use_deepspeed: the working directory is appended to PYTHONPATH.
  bool add_cwd_to_python_path = false;

  bool operator==(const AccelerateSettings&) const = default;
};

}  // namespace gangrun::config
