// What accelerate launch's own flags and config file asked for, typed (Options::accelerate).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gangrun::config {

struct AccelerateSettings {
  // The line used accelerate's own flags or an accelerate config file, or
  // --num_processes without a launcher mode (multi_process_without_mode); only
  // then do the workers get accelerate's variables. A torchrun-style line
  // keeps exactly torchrun's environment.
  bool active = false;
  // accelerate's simple launcher (--cpu, or no --multi_gpu, --use_deepspeed,
  // --use_fsdp, --use_megatron_lm): one process per machine, without
  // torchrun's rank and world variables.
  bool one_plain_process = false;
  // No launcher mode (no --cpu, --multi_gpu, --use_deepspeed, --use_fsdp,
  // --use_megatron_lm, no config file) and --num_processes more than one per
  // machine: accelerate would pick by the GPUs it sees (several: its
  // multi-GPU launcher; else one plain process). gangrun starts them all as
  // one job, which accelerate's state joins as MULTI_GPU where the workers
  // get GPUs, and as MULTI_CPU (ACCELERATE_USE_CPU=True, added per node by
  // launch/dialects/accelerate.cpp) where they get none; the devices are
  // probed for it.
  bool multi_process_without_mode = false;
  // How the process count was given ("--num_processes 2"), for the one line
  // that says how gangrun departs from accelerate here.
  std::string process_count_given;
  // On a single machine a master port that is taken is traded for a free one,
  // as accelerate launch does (agent/agent_store.cpp).
  bool free_port_when_busy = false;
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
