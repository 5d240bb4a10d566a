// What the deepspeed launcher's own flags asked for, typed (Options::deepspeed).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gangrun::config {

// --launch_style: whose conventions each worker's command line and variables
// follow. torchrun's are the default; deepspeed's add --local_rank=N to the
// script's arguments and LOCAL_SIZE, CROSS_RANK, CROSS_SIZE to its variables.
enum class LaunchStyle { torchrun, deepspeed };

struct DeepspeedSettings {
  LaunchStyle launch_style = LaunchStyle::torchrun;
  bool no_local_rank = false;  // deepspeed style without the --local_rank=N argument
  // --enable_each_rank_log DIR: each rank's stdout and stderr go to
  // DIR/<start time>_rank<R>.log instead of the console.
  std::optional<std::string> each_rank_log_dir;
  bool bind_cores_to_rank = false;  // pin each worker to its share of the cores
  // --bind_core_list: the cores to share out, ascending; nullopt: the
  // first N cores, N the number of physical cores (as deepspeed counts them).
  std::optional<std::vector<int>> bind_core_list;
  bool save_pid = false;     // write /tmp/<gangrun's pid>.deepspeed while the run lasts
  bool force_multi = false;  // start the hostfile's hosts over ssh even when there is one
  bool no_ssh = false;       // this node runs its own part only (refused with a hostfile)
  // --log_level as a verbosity (debug 1, info 0, error -1); it sets the
  // verbosity where -v and -q do not (deepspeed_values.cpp).
  std::optional<int> log_level_verbosity;

  bool operator==(const DeepspeedSettings&) const = default;
};

}  // namespace gangrun::config
