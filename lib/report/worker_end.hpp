// How one worker ended, in words, for the failure summary and the JSON
// report. "Stopped by gangrun" is said only of a worker that died of the
// signal gangrun sent it; one that outlived it and exited, or was killed by
// the SIGKILL after --term-timeout, is described as such.
#pragma once

#include "report/run_record.hpp"

#include <string>

namespace gangrun::report {

// The signal gangrun stopped the attempt's workers with: the one it
// forwarded when it was itself told to stop, else SIGTERM.
int stop_signal(const AttemptRecord& attempt);

// "exited with 2", "killed by SIGSEGV", "could not start: ...", "not started",
// "stopped by gangrun (SIGTERM)", "exited with 2 after gangrun's SIGTERM",
// "killed by SIGKILL after --term-timeout (it outlived gangrun's SIGTERM)".
std::string describe_worker_end(const WorkerRecord& worker, const AttemptRecord& attempt);

}  // namespace gangrun::report
