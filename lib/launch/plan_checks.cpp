#include "launch/plan_checks.hpp"

#include "util/strings.hpp"
#include "util/temp_dir.hpp"

#include <fmt/format.h>

#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

namespace gangrun::launch {
namespace {

namespace fs = std::filesystem;

// The first whitespace-separated word of a file, as a number; "max" and
// anything unreadable are nullopt.
std::optional<long> read_number(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  auto number = strings::parse_int(word);
  if (!number || *number < 0) return std::nullopt;
  return static_cast<long>(*number);
}

// /proc/loadavg: "0.00 0.01 0.05 1/234 5678"; 234 is every thread on the system.
std::optional<long> tasks_in_use() {
  std::ifstream in("/proc/loadavg");
  std::string load1;
  std::string load5;
  std::string load15;
  std::string running;
  if (!(in >> load1 >> load5 >> load15 >> running)) return std::nullopt;
  auto slash = running.find('/');
  if (slash == std::string::npos) return std::nullopt;
  auto total = strings::parse_int(std::string_view(running).substr(slash + 1));
  if (!total) return std::nullopt;
  return static_cast<long>(*total);
}

// cgroup v2 only ("0::/path" in /proc/self/cgroup); pids.max applies at
// every level, so the level with the least headroom wins.
void read_cgroup_pids(ProcessCapacity& capacity) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::string relative;
  while (std::getline(in, line)) {
    if (line.starts_with("0::")) relative = line.substr(3);
  }
  if (relative.empty()) return;
  std::optional<long> best_headroom;
  for (std::string level = relative == "/" ? "" : relative;;) {
    const fs::path dir = "/sys/fs/cgroup" + level;
    if (auto max = read_number(dir / "pids.max")) {
      long current = read_number(dir / "pids.current").value_or(0);
      if (!best_headroom || *max - current < *best_headroom) {
        best_headroom = *max - current;
        capacity.cgroup_pids_max = *max;
        capacity.cgroup_pids_current = current;
        capacity.cgroup = level.empty() ? "/" : level;
      }
    }
    if (level.empty()) break;
    std::size_t slash = level.rfind('/');
    level.resize(slash == std::string::npos ? 0 : slash);
  }
}

std::string with_in_use(long limit, std::optional<long> in_use) {
  if (!in_use) return std::to_string(limit);
  return fmt::format("{} ({} in use now)", limit, *in_use);
}

bool is_root() { return ::getuid() == 0 || ::geteuid() == 0; }

}  // namespace

ProcessCapacity read_process_capacity() {
  ProcessCapacity capacity;
  struct rlimit limit {};
  if (!is_root() && ::getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur <= static_cast<rlim_t>(std::numeric_limits<long>::max())) {
    capacity.rlimit_nproc = static_cast<long>(limit.rlim_cur);
  }
  capacity.pid_max = read_number("/proc/sys/kernel/pid_max");
  capacity.threads_max = read_number("/proc/sys/kernel/threads-max");
  capacity.tasks_in_use = tasks_in_use();
  read_cgroup_pids(capacity);
  return capacity;
}

Expected<void> check_process_capacity(long local_workers, const std::string& count_given,
                                      const ProcessCapacity& capacity) {
  const long needed = local_workers * k_processes_per_worker + k_process_margin;
  auto refuse = [&](const std::string& limit, const std::string& raise) {
    return fail_usage(fmt::format(
        "{}: {} workers need about {} processes ({} each: the worker and the shim that "
        "supervises it, plus {} for gangrun), but {}; give fewer workers per node, or {}",
        count_given, local_workers, needed, k_processes_per_worker, k_process_margin, limit,
        raise));
  };
  const long in_use = capacity.tasks_in_use.value_or(0);
  if (capacity.rlimit_nproc && needed > *capacity.rlimit_nproc) {
    return refuse(fmt::format("the process limit of this user (ulimit -u, RLIMIT_NPROC) is {}",
                              *capacity.rlimit_nproc),
                  "raise it with ulimit -u");
  }
  if (capacity.pid_max && needed + in_use > *capacity.pid_max) {
    return refuse("kernel.pid_max is " + with_in_use(*capacity.pid_max, capacity.tasks_in_use),
                  "raise it with sysctl kernel.pid_max");
  }
  if (capacity.threads_max && needed + in_use > *capacity.threads_max) {
    return refuse(
        "kernel.threads-max is " + with_in_use(*capacity.threads_max, capacity.tasks_in_use),
        "raise it with sysctl kernel.threads-max");
  }
  if (capacity.cgroup_pids_max &&
      needed + capacity.cgroup_pids_current > *capacity.cgroup_pids_max) {
    return refuse(
        fmt::format("the cgroup {} allows {} processes (pids.max; {} in use now)", capacity.cgroup,
                    *capacity.cgroup_pids_max, capacity.cgroup_pids_current),
        "raise its pids.max");
  }
  return {};
}

Expected<void> check_report_path(const std::string& path) {
  const std::string where = "--report " + path;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      return fail_usage(where + ": is a directory; give the path of a file to write the report to");
    }
    if (::access(path.c_str(), W_OK) != 0) {
      return fail_usage(where + ": cannot be written (" + errno_text(errno) +
                        "); give a file you may write");
    }
    return {};
  }
  if (errno != ENOENT) {
    return fail_usage(where + ": " + errno_text(errno) +
                      "; give a file in a directory you may write");
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code error;
  if (!fs::exists(parent, error)) {
    return fail_usage(where + ": the directory " + parent.string() +
                      " does not exist; create it first, or give a file in an existing directory");
  }
  if (!fs::is_directory(parent, error)) {
    return fail_usage(where + ": " + parent.string() + " is not a directory");
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return fail_usage(where + ": cannot create a file in " + parent.string() + " (" +
                      errno_text(errno) + "); give a file in a directory you may write");
  }
  return {};
}

Expected<void> check_writable_directory(const std::string& path, const std::string& what,
                                        const std::string& fix) {
  fs::path existing = fs::path(path);
  std::error_code error;
  while (!existing.empty() && !fs::exists(existing, error)) {
    if (error) break;
    existing = existing.parent_path();
  }
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, error)) {
    return fail_usage(what + ": " + existing.string() + " is not a directory; " + fix);
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    return fail_usage(what + ": cannot write in " + existing.string() + " (" + errno_text(errno) +
                      "); " + fix);
  }
  return {};
}

Expected<void> check_output_paths(const LaunchPlan& plan) {
  if (plan.report_path) {
    if (auto ok = check_report_path(*plan.report_path); !ok) return ok;
  }
  if (plan.log_dir) {
    return check_writable_directory(*plan.log_dir, "--log_dir " + *plan.log_dir,
                                    "give a directory you may write");
  }
  // The directory the run directory goes in without --log_dir.
  std::string what = temp_dir_origin(plan.host_env);
  std::string root = temp_dir(plan.host_env);
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
      ::access(root.c_str(), W_OK | X_OK) != 0) {
    return fail_usage(what +
                      " is not a directory gangrun can write; without --log_dir it keeps the "
                      "workers' error files in a temporary directory there. Point TMPDIR at a "
                      "writable directory, or give --log_dir");
  }
  return {};
}

Expected<void> check_store_host_resolves(const LaunchPlan& plan) {
  if (!plan.multi_node) return {};
  const std::string& host = plan.master_addr;  // the c10d endpoint's host under c10d
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  if (status == 0) return {};

  const std::string& origin = plan.master_addr_origin;
  return fail_usage(fmt::format(
      "the store's host '{}' ({}) does not resolve on {}: {}. Every worker resolves it too; "
      "give --master_addr an address every node reaches (an IP address), or add '{}' to "
      "/etc/hosts or DNS on every node",
      host, origin, plan.host, ::gai_strerror(status), host));
}

Expected<void> check_virtual_local_rank(const LaunchPlan& plan) {
  if (!plan.virtual_local_rank) return {};
  auto inherited = env_lookup(plan.host_env, "CUDA_VISIBLE_DEVICES");
  if (!inherited) return {};
  const std::size_t listed = strings::split(*inherited, ',').size();
  if (listed >= static_cast<std::size_t>(plan.local_world_size)) return {};
  return fail_usage(fmt::format(
      "--virtual_local_rank gives each of the {} workers one device of CUDA_VISIBLE_DEVICES={}, "
      "which lists {}; start fewer workers per node, or widen CUDA_VISIBLE_DEVICES",
      plan.local_world_size, *inherited, listed));
}

}  // namespace gangrun::launch
