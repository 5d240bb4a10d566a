// Checks of a plan against this host, made before anything starts: that the
// worker count fits the process limits, and that the files a run writes (the
// --report file, the --log_dir or the temporary run directory) can be
// written. They read the system and change nothing; each failure is a usage
// error (exit 2) naming the flag, the value and the way out.
#pragma once

#include "launch/plan.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>

namespace gangrun::launch {

// A local worker costs two processes: the worker and the small shim that
// supervises it. The margin covers gangrun itself, its probe children and
// its threads.
inline constexpr long k_processes_per_worker = 2;
inline constexpr long k_process_margin = 32;

// The limits that bound how many processes gangrun may start. nullopt: not
// known, or no limit.
struct ProcessCapacity {
  // Soft RLIMIT_NPROC when finite; nullopt for root, whom the kernel exempts.
  std::optional<long> rlimit_nproc;
  std::optional<long> pid_max;       // /proc/sys/kernel/pid_max
  std::optional<long> threads_max;   // /proc/sys/kernel/threads-max
  std::optional<long> tasks_in_use;  // threads on the system now (/proc/loadavg)
  // The tightest pids.max of gangrun's cgroup v2 and its ancestors, with
  // that cgroup's pids.current and its path under /sys/fs/cgroup.
  std::optional<long> cgroup_pids_max;
  long cgroup_pids_current = 0;
  std::string cgroup;
};

ProcessCapacity read_process_capacity();

// count_given names where the count came from ("--nproc_per_node 500000").
Expected<void> check_process_capacity(long local_workers, const std::string& count_given,
                                      const ProcessCapacity& capacity);

// --report FILE: an existing FILE must be writable and not a directory; a
// new one needs an existing, writable parent directory.
Expected<void> check_report_path(const std::string& path);

// A directory gangrun will create (with parents) and write in: the nearest
// part of the path that exists must be a directory it may write. `what`
// names the setting in messages ("--log_dir /x", "TMPDIR=/x").
Expected<void> check_writable_directory(const std::string& path, const std::string& what,
                                        const std::string& fix);

// Many nodes: the store's host name (--master_addr, or the c10d endpoint)
// must resolve here, the way the workers will resolve it (getaddrinfo). A
// usage error says where the name came from (the Slurm node list, say) and
// names the fixes: --master_addr with an address, or the hosts file.
Expected<void> check_store_host_resolves(const LaunchPlan& plan);

// Every file check for a plan that is about to run (or be shown by --dry-run).
Expected<void> check_output_paths(const LaunchPlan& plan);

// --virtual_local_rank: an inherited CUDA_VISIBLE_DEVICES must name a device
// for every local worker (torchrun refuses the same).
Expected<void> check_virtual_local_rank(const LaunchPlan& plan);

}  // namespace gangrun::launch
