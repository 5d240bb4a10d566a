// One reader of /proc/PID/stat for the gang doctor: a process's state, its
// parent, its start time and its CPU time all come from there; and the words
// for a process stopped from outside.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

// The fields of /proc/PID/stat after the command (which may hold spaces and
// parentheses): [0] is field 3 of the line (the state), [1] the parent's
// pid, [19] the start time in clock ticks. Empty when the process is gone.
std::vector<std::string> proc_stat_fields(long pid, const std::string& proc_root = "/proc");

// The CPU time of all the process's threads (utime + stime, fields [11] and
// [12] of proc_stat_fields), in seconds; nullopt when they are missing or
// not numbers.
std::optional<double> cpu_seconds_of(const std::vector<std::string>& fields);

// A process stopped from outside, as its state says: 'T' (a stop signal:
// kill -STOP, a job its scheduler suspended) or 't' (a tracer holds it: a
// debugger); nullopt for any other state and when the process is gone.
std::optional<char> stopped_state(long pid, const std::string& proc_root = "/proc");

// What /proc says of a process at one moment, for the straggler watch: the
// state of its main thread (R running or runnable, S asleep, D in a disk
// wait, T or t stopped), the CPU time of all its threads (utime + stime), and
// how long its main thread has been runnable without a CPU
// (/proc/PID/schedstat; nullopt where the kernel keeps no schedstat).
struct ProcSample {
  char state = '?';
  double cpu_s = 0;
  std::optional<double> run_delay_s;
};

// nullopt when the process is gone.
std::optional<ProcSample> proc_sample(long pid, const std::string& proc_root = "/proc");

// How a process in that state is named to people: "stopped (SIGSTOP or
// another stop signal; state T)" or "stopped by a debugger or another
// tracer (state t)".
std::string stopped_words(char state);

}  // namespace gangrun::doctor
