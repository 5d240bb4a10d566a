#include "launch/dialects/deepspeed_cores.hpp"

#include "util/strings.hpp"

#include <string>

namespace gangrun::launch {

Expected<std::vector<std::vector<int>>> split_cores(const config::DeepspeedSettings& ds,
                                                    int local_workers, const CoreHost& host) {
  std::vector<std::vector<int>> shares(static_cast<std::size_t>(local_workers));
  if (!ds.bind_cores_to_rank) return shares;

  std::vector<int> cores;
  std::string named = "--bind_core_list " +
                      (ds.bind_core_list ? strings::join_numbers(*ds.bind_core_list, ",") : "");
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
      if (!host.allowed.empty() && !host.allowed.contains(core)) {
        std::vector<int> allowed(host.allowed.begin(), host.allowed.end());
        return fail_usage("--bind_cores_to_rank: core " + std::to_string(core) + " (of " + named +
                          ") is not one gangrun may run on (allowed: " +
                          strings::join_numbers(allowed, ",") + ")");
      }
    }
  }
  return shares;
}

}  // namespace gangrun::launch
