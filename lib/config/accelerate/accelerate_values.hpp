// What accelerate launch's own flags and config file add to Options beyond
// their rows (build_options.cpp asks once the core options are typed).
#pragma once

#include "config/layering.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>

namespace gangrun::config {

// The one answer to "does this line speak accelerate?": one of accelerate
// launch's own flags (a row of the accelerate group, --config_file among them)
// has a value that is not the table's default. Layering asks it of the command
// line alone (whether to read accelerate's default config file, as accelerate
// launch would); type_accelerate_values asks it of every layer (whether the
// workers get accelerate's variables).
bool speaks_accelerate(const LayeredValues& values);

// accelerate's flags that gangrun cannot honour (TPUs, SageMaker, --env),
// refused when given, with what to do instead.
Expected<void> refuse_unhonoured_accelerate_flags(const LayeredValues& values);

// --mpirun_hostfile FILE: the hostfile gangrun's nodes are started on through
// Open MPI's mpirun (remote/mpirun_start.hpp), as with -H FILE --launcher
// openmpi; nullopt when not given. Refused with -H or another --launcher.
Expected<std::optional<std::string>> type_mpirun_hostfile(const LayeredValues& values,
                                                          const Options& options);

// What accelerate's flags add to options (every row applied, the
// --mpirun_hostfile taken); build_options.cpp assigns each field.
struct AccelerateAdditions {
  // Options::accelerate, which no row sets; inactive unless the line speaks
  // accelerate. Its one_plain_process (accelerate's simple launcher: the
  // script once per machine) stands for --nproc_per_node 1 without
  // --num_processes or --num_gpus.
  AccelerateSettings settings;
  // With the c10d backend and no --rdzv_endpoint, accelerate launch meets at
  // --main_process_ip:--main_process_port (port 29500 by default).
  std::optional<Endpoint> rdzv_endpoint;
};

// What options and values add through accelerate's flags and config file;
// changes nothing, and usage errors name the option as given. Besides a line
// that speaks accelerate, a line whose process count is --num_processes (-n),
// more than one per machine, without --nproc_per_node, a launcher mode or a
// config file, gets accelerate's variables too
// (AccelerateSettings::multi_process_without_mode): its workers are one job
// that accelerate's state recognises.
Expected<AccelerateAdditions> type_accelerate_values(const LayeredValues& values,
                                                     const Options& options);

}  // namespace gangrun::config
