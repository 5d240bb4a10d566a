// accelerate's YAML config file (accelerate config writes it; accelerate
// launch --config_file reads it), turned into option values. This file reads
// the YAML and maps its keys to gangrun's options; layering.cpp places the
// values below the command line and the environment.
#pragma once

#include "util/env.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::config {

struct AccelerateConfigEntry {
  std::string option;  // the snake_case option it sets: "nnodes", "zero_stage"
  std::string key;     // as written: "num_machines", "deepspeed_config.zero_stage"
  // Flags: "true"/"false". Other values as accelerate's str() spells the YAML
  // value: booleans "True"/"False", numbers and strings as written.
  std::string text;
  int position = 0;  // the entry's place in the file
  // From distributed_type (or parallelism_config): stands back when the
  // command line names a mode itself, as in accelerate launch.
  bool from_distributed_type = false;
};

// Reads `path` (the checks of config_file.hpp) and maps every key accelerate
// launch reads. Usage errors name the path and key: YAML that does not parse
// or is not a mapping, a key accelerate does not know (accelerate refuses
// them too), a value of the wrong shape, a compute_environment or
// distributed_type gangrun cannot run (SageMaker, TPU). Keys accelerate
// launch does not take from the file (rdzv_backend, same_network,
// enable_cpu_affinity, downcast_bf16, the TPU pod keys) and null values give
// no entry.
Expected<std::vector<AccelerateConfigEntry>> load_accelerate_config(const std::string& path);

// The same on YAML text already in memory; `path` only names it in messages.
Expected<std::vector<AccelerateConfigEntry>> parse_accelerate_config_text(const std::string& text,
                                                                          const std::string& path);

// accelerate's default config file: $HF_HOME, else $XDG_CACHE_HOME/huggingface,
// else ~/.cache/huggingface, then accelerate/default_config.yaml. nullopt when
// neither HOME nor those variables say where.
std::optional<std::string> default_accelerate_config_path(const EnvMap& env);

}  // namespace gangrun::config
