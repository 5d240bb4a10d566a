// CPUs as devices, for `--accelerator cpu`: one Device per logical CPU this
// process may run on. No library, no driver, nothing that can be missing, so
// the report is never unavailable.
//
// The affinity mask, not the machine's CPU count, is what counts: under
// Slurm, taskset, a cgroup cpuset or a container the process may run on only
// a few of the machine's CPUs, and those are the ones to split among workers.
#pragma once

#include "accel/device.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace gangrun::accel {

// Probes this process (its own affinity, read with sched_getaffinity: threads
// started later inherit it, so call it from the thread whose mask counts).
// Devices are the CPUs in the mask, ascending; index is the logical CPU
// number. The mask is read into a dynamically sized set that grows until the
// kernel accepts it, so machines with more than 1024 CPUs are read whole.
// Should sched_getaffinity fail anyway, it reports sysconf's online CPUs
// numbered 0..n-1 (at least one). name is /proc/cpuinfo's "model name"
// (empty where there is none, e.g. on most ARM kernels), architecture
// uname's machine ("x86_64", "aarch64").
BackendReport probe_cpu();

// The report probe_cpu builds from what it read: one DeviceKind::cpu Device
// per entry of cpus, in the order given, each named model and with
// architecture machine. Pure, for tests.
BackendReport cpu_report(const std::vector<int>& cpus, const std::string& model,
                         const std::string& machine);

// The value of the first "model name" line of /proc/cpuinfo's text, without
// surrounding spaces; empty when there is none.
std::string cpuinfo_model_name(std::string_view cpuinfo);

// The kernel's CPU list syntax (as in /sys/devices/system/cpu/online, cpuset
// and taskset -c): runs of two or more consecutive CPUs as "A-B", others
// alone, comma-separated: {0,1,2,3,8,10,11} is "0-3,8,10-11"; none is "".
// cpus must be sorted ascending without repeats (what probe_cpu gives); other
// input is written as given, with runs found only among ascending neighbours.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace gangrun::accel
