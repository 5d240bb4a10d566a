// What the deepspeed launcher's own flags do beyond their rows' fields (each
// row of deepspeed_options.cpp types its value into Options::deepspeed;
// build_options.cpp calls this after every row is applied).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace gangrun::config {

// --launch_style: torchrun or deepspeed.
Expected<LaunchStyle> parse_launch_style(std::string_view text);

// deepspeed's --log_level as gangrun's verbosity: debug 1, info and warning 0,
// error and critical -1.
Expected<int> parse_log_level(std::string_view level);

// What deepspeed's flags add to the core options they stand for, beyond their
// rows' fields; build_options.cpp assigns each field. Unset: nothing added.
struct DeepspeedAdditions {
  // --log_level as the verbosity, where -v and -q are not given.
  std::optional<int> verbosity;
  // With --accelerator cpu, --num_gpus N is N workers per node, as deepspeed's
  // CPU accelerator takes it, unless --nproc_per_node or --num_processes is
  // given: it becomes --nproc_per_node N, and --num_gpus selects no devices.
  std::optional<int> num_gpus_as_workers_per_node;

  bool operator==(const DeepspeedAdditions&) const = default;
};

// What options (every row applied) and values add through deepspeed's flags;
// never fails, and changes nothing.
DeepspeedAdditions type_deepspeed_values(const LayeredValues& values, const Options& options);

// Refuses --no_ssh with a hostfile, and --enable_each_rank_log with --log_dir,
// -r or -t (both would place the workers' output), or naming a file that is
// not a directory (--autotuning and --venv_script are refused rows). Usage
// errors name the option as given.
Expected<void> check_deepspeed_values(const LayeredValues& values, const Options& options);

// deepspeed's --bind_core_list: "1,3-5,7" -> {1, 3, 4, 5, 7}. Each item is a
// core or an inclusive range A-B (A <= B), the items ascending without
// overlap, no spaces (deepspeed's parse_range_list); usage errors say which
// item is wrong.
Expected<std::vector<int>> parse_core_list(std::string_view text);

}  // namespace gangrun::config
