// Which workers have reached the store: a rank that has not connected to the
// store every worker meets through has not reached init_process_group (or
// its rendezvous), and is the one the others wait for in the store's
// barrier. Read from /proc, as the kernel sees the connections: each
// worker's socket descriptors, and the TCP connections of its network
// namespace whose far end is the store's port. Nothing is asked of the
// store or of the workers, so it works whatever version of PyTorch the
// workers run and wherever the store is.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace gangrun::doctor {

// The pids among pids that hold an established TCP connection to `port`
// (on any address).
std::set<long> connected_to_port(const std::vector<long>& pids, int port,
                                 const std::string& proc_root = "/proc");

}  // namespace gangrun::doctor
