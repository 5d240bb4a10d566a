// The options of the deepspeed launcher's own flags, as rows of the option table.
// deepspeed's -i/-e, --num_gpus, --num_nodes, --master_addr/--master_port,
// --node_rank, --module and --no_python are rows of the core table
// (option_table.cpp); its hostfile and ssh flags are in hosts_options.cpp.
#include "config/deepspeed/deepspeed_values.hpp"
#include "config/option_apply.hpp"
#include "config/option_table.hpp"
#include "config/option_values.hpp"

namespace gangrun::config {

std::vector<OptionSpec> deepspeed_option_specs() {
  using G = OptionGroup;
  using K = OptionKind;
  return {
      {.name = "launch_style",
       .group = G::deepspeed,
       .metavar = "STYLE",
       .default_text = "torchrun",
       .choices = {"torchrun", "deepspeed"},
       .help = "whose conventions workers get. torchrun: its variables only; deepspeed: also "
               "--local_rank=N after the script (unless --no_local_rank) and LOCAL_SIZE, "
               "CROSS_RANK, CROSS_SIZE, as the deepspeed launcher gives them. Set "
               "GANGRUN_LAUNCH_STYLE=deepspeed to make it the default",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::launch_style,
                              parse_launch_style>},
      {.name = "no_local_rank",
       .group = G::deepspeed,
       .kind = K::flag,
       .help = "do not append --local_rank=N to the script's arguments (deepspeed)",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::no_local_rank, parse_bool>},
      {.name = "enable_each_rank_log",
       .group = G::deepspeed,
       .metavar = "DIR",
       .value_hint = ValueHint::directory,
       .help = "write each rank's stdout and stderr to DIR/<start time>_rank<R>.log instead of "
               "the console, as deepspeed names them (DIR is created)",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::each_rank_log_dir,
                              non_empty_text>},
      {.name = "bind_cores_to_rank",
       .group = G::deepspeed,
       .kind = K::flag,
       .help = "pin each worker to its own share of the cores (the cores divided evenly "
               "among the local workers, in order) and set OMP_NUM_THREADS to the share's size",
       .apply =
           into_settings<&Options::deepspeed, &DeepspeedSettings::bind_cores_to_rank, parse_bool>},
      {.name = "bind_core_list",
       .group = G::deepspeed,
       .metavar = "LIST",
       .help = "the cores --bind_cores_to_rank shares out, e.g. 1,3-5,7 (ascending). Default: "
               "the first N cores, N the number of physical cores",
       .apply =
           into_settings<&Options::deepspeed, &DeepspeedSettings::bind_core_list, parse_core_list>},
      {.name = "save_pid",
       .group = G::deepspeed,
       .kind = K::flag,
       .help = "write gangrun's pid to /tmp/<pid>.deepspeed, <pid> gangrun's own, while the "
               "run lasts (removed when it ends)",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::save_pid, parse_bool>},
      {.name = "force_multi",
       .group = G::deepspeed,
       .kind = K::flag,
       .help = "start the hosts of a hostfile over ssh even when it names only one",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::force_multi, parse_bool>},
      {.name = "no_ssh",
       .group = G::deepspeed,
       .kind = K::flag,
       .help = "start nothing on other hosts: this node runs its own part (--node_rank), as "
               "gangrun always does without a hostfile",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::no_ssh, parse_bool>},
      {.name = "venv_script",
       .group = G::deepspeed,
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .help = "deepspeed's script sourced on each host before its launch: not supported; give "
               "the environment's interpreter with --python instead",
       .refused = "gangrun sources no script on the hosts it starts (it passes its PATH on "
                  "instead); give the environment's interpreter with --python (e.g. --python "
                  "/path/to/venv/bin/python)"},
      {.name = "log_level",
       .group = G::deepspeed,
       .metavar = "LEVEL",
       .choices = {"debug", "info", "warning", "error", "critical"},
       .help = "how much gangrun says (deepspeed's spelling): debug is -v, error and "
               "critical are -q; -v and -q win over it",
       .apply = into_settings<&Options::deepspeed, &DeepspeedSettings::log_level_verbosity,
                              parse_log_level>},
      {.name = "autotuning",
       .group = G::deepspeed,
       .metavar = "MODE",
       .choices = {"tune", "run"},
       .help = "deepspeed's autotuner: not supported (it runs in deepspeed's Python package); "
               "tune with deepspeed, then launch the tuned config with gangrun",
       .refused = "deepspeed's autotuner runs its experiments inside deepspeed's Python package; "
                  "tune with 'deepspeed --autotuning tune ...', then launch the configuration it "
                  "writes with gangrun"},
  };
}

}  // namespace gangrun::config
