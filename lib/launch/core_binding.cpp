#include "launch/core_binding.hpp"

#include "util/strings.hpp"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gangrun::launch {
namespace {

// The distinct contents of one topology file over every cpuN directory.
std::set<std::string> distinct_topology(const std::string& file) {
  std::set<std::string> seen;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/cpu", error)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("cpu") || !strings::plain_decimal(name.substr(3))) continue;
    std::ifstream in(entry.path() / "topology" / file);
    std::string text;
    if (in && std::getline(in, text)) seen.insert(std::string(strings::trim(text)));
  }
  return seen;
}

std::string cores_text(const std::vector<int>& cores) {
  std::vector<std::string> parts;
  for (int core : cores) parts.push_back(std::to_string(core));
  return strings::join(parts, ",");
}

}  // namespace

std::optional<int> physical_core_count() {
  for (const char* file : {"core_cpus_list", "thread_siblings_list"}) {
    std::set<std::string> cores = distinct_topology(file);
    if (!cores.empty()) return static_cast<int>(cores.size());
  }
  return std::nullopt;
}

std::set<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.insert(static_cast<int>(cpu));
  }
  return cpus;
}

Expected<std::vector<std::vector<int>>> split_cores(const config::Options& options,
                                                    int local_workers, const CoreHost& host) {
  const config::DeepspeedSettings& ds = options.deepspeed;
  std::vector<std::vector<int>> shares(static_cast<std::size_t>(local_workers));
  if (!ds.bind_cores_to_rank) return shares;

  std::vector<int> cores;
  std::string named =
      "--bind_core_list " + (ds.bind_core_list ? cores_text(*ds.bind_core_list) : "");
  if (ds.bind_core_list) {
    cores = *ds.bind_core_list;
  } else if (host.physical_cores) {
    for (int core = 0; core < *host.physical_cores; ++core) cores.push_back(core);
    named = "this host's " + std::to_string(*host.physical_cores) + " physical cores";
  } else {
    return fail_usage(
        "--bind_cores_to_rank: cannot count this host's physical cores "
        "(/sys/devices/system/cpu tells nothing); name the cores with --bind_core_list");
  }
  const std::size_t per_worker = cores.size() / static_cast<std::size_t>(local_workers);
  if (per_worker == 0) {
    return fail_usage("--bind_cores_to_rank: " + named + " cannot give each of the " +
                      std::to_string(local_workers) +
                      " workers a core of its own; name more cores or start fewer workers");
  }
  for (std::size_t worker = 0; worker < shares.size(); ++worker) {
    auto first = cores.begin() + static_cast<std::ptrdiff_t>(worker * per_worker);
    shares[worker].assign(first, first + static_cast<std::ptrdiff_t>(per_worker));
    for (int core : shares[worker]) {
      if (!host.allowed.empty() && host.allowed.count(core) == 0) {
        std::vector<int> allowed(host.allowed.begin(), host.allowed.end());
        return fail_usage("--bind_cores_to_rank: core " + std::to_string(core) + " (of " + named +
                          ") is not one gangrun may run on (allowed: " + cores_text(allowed) + ")");
      }
    }
  }
  return shares;
}

}  // namespace gangrun::launch
