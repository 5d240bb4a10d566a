#include "config/options.hpp"

namespace gangrun::config {

const Options::Origin* Options::user_origin(std::string_view name) const {
  auto it = origins.find(std::string(name));
  return it != origins.end() && given_by_user(it->second.source) ? &it->second : nullptr;
}

const char* to_string(Source source) {
  switch (source) {
    case Source::default_value:
      return "default";
    case Source::slurm:
      return "Slurm";
    case Source::scheduler:
      return "job scheduler";
    case Source::accelerate_config:
    case Source::json_config:
      return "config file";
    case Source::pet_env:
      return "PET_ environment";
    case Source::gangrun_env:
      return "GANGRUN_ environment";
    case Source::command_line:
      return "command line";
  }
  return "unknown";
}

const char* to_string(Accelerator accelerator) {
  switch (accelerator) {
    case Accelerator::automatic:
      return "auto";
    case Accelerator::cuda:
      return "cuda";
    case Accelerator::xpu:
      return "xpu";
    case Accelerator::rocm:
      return "rocm";
    case Accelerator::cpu:
      return "cpu";
    case Accelerator::hpu:
      return "hpu";
    case Accelerator::npu:
      return "npu";
    case Accelerator::neuron:
      return "neuron";
  }
  return "auto";
}

}  // namespace gangrun::config
