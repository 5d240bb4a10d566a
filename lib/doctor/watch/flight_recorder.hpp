// NCCL's flight recorder, switched on and collected (--flight-recorder).
// PyTorch's NCCL process groups keep the last collectives of every rank in
// a ring buffer when TORCH_NCCL_TRACE_BUFFER_SIZE (TORCH_FR_BUFFER_SIZE in
// newer releases) is set, write it to TORCH_NCCL_DEBUG_INFO_TEMP_FILE
// (TORCH_FR_DUMP_TEMP_FILE) + <rank> when their watchdog times out
// (TORCH_NCCL_DUMP_ON_TIMEOUT), and, when TORCH_NCCL_DEBUG_INFO_PIPE_FILE
// is set, also when a byte is written to the named pipe <that> + <rank> +
// ".pipe" each rank makes. gangrun points all of them into the attempt's
// directory, asks for a dump through the pipes when the gang hangs (before
// it stops anything), and lists the dumps in the report. Variables the
// user set are left as they are. Releases before the pipe (PyTorch 2.2)
// only dump on their own timeout; workers without NCCL ignore them all.
#pragma once

#include "util/env.hpp"

#include <string>
#include <vector>

namespace gangrun::doctor {

// The variables every worker of a round gets; dir is made here.
EnvMap flight_recorder_env(const std::string& dir, const EnvMap& host_env);

// Writes to every rank's dump pipe in dir; how many pipes took it.
int request_flight_recorder_dumps(const std::string& dir);

// The dumps written into dir so far (one file per rank).
std::vector<std::string> flight_recorder_dumps(const std::string& dir);

}  // namespace gangrun::doctor
