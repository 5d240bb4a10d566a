// deepspeed's --bind_cores_to_rank: which cores each local worker is pinned
// to. The split is deepspeed's (utils/numa.py get_numactl_cmd): the cores
// are the --bind_core_list, else the first N core numbers, N the number of
// physical cores; each worker gets floor(cores / workers) of them, in order,
// local rank 0 first; what is left over goes to nobody. deepspeed also binds
// memory to the NUMA node of the share (numactl -m); gangrun does not.
// A pinned worker's OMP_NUM_THREADS is omp_threads.hpp's.
#pragma once

#include "config/deepspeed/deepspeed_settings.hpp"
#include "util/error.hpp"

#include <optional>
#include <set>
#include <vector>

namespace gangrun::launch {

// What the binding needs to know about this host.
struct CoreHost {
  std::optional<int> physical_cores;  // host::physical_core_count()
  std::set<int> allowed;              // host::usable_cpus(); empty: not checked
};

// Each local worker's cores, in local-rank order; empty vectors when
// --bind_cores_to_rank is not asked for. Usage errors: fewer cores than
// workers, a core gangrun may not run on (not in `allowed`), or no way to
// count the physical cores without a --bind_core_list.
Expected<std::vector<std::vector<int>>> split_cores(const config::DeepspeedSettings& ds,
                                                    int local_workers, const CoreHost& host);

}  // namespace gangrun::launch
