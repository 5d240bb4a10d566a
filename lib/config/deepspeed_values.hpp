// Types the layered values of the deepspeed launcher's own flags into Options (build_options.cpp
// calls it after the core options are typed).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <string_view>
#include <vector>

namespace gangrun::config {

// Sets options.deepspeed (and the core options these flags stand for:
// --log_level sets the verbosity where -v and -q do not; with --accelerator
// cpu, --num_gpus N is N workers per node, as deepspeed's CPU accelerator
// takes it, unless --nproc_per_node or --num_processes is given); refuses
// --autotuning, --venv_script, --no_ssh with a hostfile, and --enable_each_rank_log with --log_dir,
// -r or -t (both would place the workers' output), or naming a file that is not a directory. Usage
// errors name the option as given.
Expected<void> type_deepspeed_values(const LayeredValues& values, Options& options);

// deepspeed's --bind_core_list: "1,3-5,7" -> {1, 3, 4, 5, 7}. Each item is a
// core or an inclusive range A-B (A <= B), the items ascending without
// overlap, no spaces (deepspeed's parse_range_list); usage errors say which
// item is wrong.
Expected<std::vector<int>> parse_core_list(std::string_view text);

}  // namespace gangrun::config
