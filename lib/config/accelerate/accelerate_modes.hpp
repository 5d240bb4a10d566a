// accelerate launch's launcher modes: the flags that choose how its
// processes start. One row each, and every question about them (which
// exclude each other, which outrank a config file's distributed_type, which
// mean "not the N-processes-without-a-mode line", which distributed_type
// stands for which) is answered by a column here.
#pragma once

#include "config/option_names.hpp"

#include <string_view>

namespace gangrun::config {

struct AccelerateMode {
  std::string_view option;  // its row in the option table
  // The config file's distributed_type that stands for it; empty: none, or
  // several (--multi_gpu's MULTI_GPU, MULTI_XPU, ..., accelerate_config_file.cpp).
  std::string_view distributed_type = {};
  // accelerate launch refuses two of these given together (launch.py:
  // --cpu, --multi_gpu, --tpu, --use_deepspeed, --use_fsdp; gangrun refuses
  // --tpu on its own, before).
  bool one_at_a_time = false;
  // Given above the config file (command line, GANGRUN_*, PET_*), it makes
  // the file's distributed_type stand back. --cpu does not: it is a
  // setting of every launcher, not a launcher of its own.
  bool outranks_config_file = true;
  // gangrun starts workers under it (it refuses the TPU ones).
  bool starts_workers = true;
};

// In the order their conflicts are reported.
inline constexpr AccelerateMode k_accelerate_modes[] = {
    {.option = opt::multi_gpu, .one_at_a_time = true},
    {.option = opt::cpu, .one_at_a_time = true, .outranks_config_file = false},
    {.option = opt::use_deepspeed, .distributed_type = "DEEPSPEED", .one_at_a_time = true},
    {.option = opt::use_fsdp, .distributed_type = "FSDP", .one_at_a_time = true},
    {.option = opt::use_megatron_lm, .distributed_type = "MEGATRON_LM"},
    {.option = opt::tpu, .starts_workers = false},
    {.option = opt::tpu_cluster, .starts_workers = false},
};

}  // namespace gangrun::config
