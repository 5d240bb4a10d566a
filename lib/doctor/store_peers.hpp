// Which workers have reached the store: a rank that has not connected to the
// store every worker meets through has not reached init_process_group (or
// its rendezvous), and is the one the others wait for in the store's
// barrier. Read from /proc, as the kernel sees the connections: each
// worker's socket descriptors, and the TCP connections of its network
// namespace whose far end is the store's port. Nothing is asked of the
// store or of the workers, so it works whatever version of PyTorch the
// workers run and wherever the store is.
#pragma once

#include "doctor/stack_groups.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::doctor {

// The pids among pids that hold an established TCP connection to `port`
// (on any address).
std::set<long> connected_to_port(const std::vector<long>& pids, int port,
                                 const std::string& proc_root = "/proc");

// Which of the ranks read have reached the store at `store` ("host:port").
struct StoreArrivals {
  // The ranks with no connection to it; nullopt when that is not known: no
  // port in `store`, or no rank connected and the program is not Python
  // (other programs need not meet through the store).
  std::optional<std::vector<int>> missing;
  std::string line;  // what says so (empty when every rank has one, or not known)
};
StoreArrivals store_arrivals(const std::vector<RankStacks>& ranks, const std::string& store,
                             bool python);

// The line that names the ranks in missing as not at the store, of total
// ranks read; empty when none is missing.
std::string not_at_store_line(const std::vector<int>& missing, std::size_t total,
                              const std::string& store);

}  // namespace gangrun::doctor
