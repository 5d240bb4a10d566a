#include "doctor/store_peers.hpp"

#include "report/blame.hpp"
#include "util/strings.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gangrun::doctor {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_established = "01";

// The inodes of the established connections in a /proc/PID/net/tcp{,6}
// table whose remote port is port.
void connections_to(const std::string& table, int port, std::set<std::string>& inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::vector<std::string> columns(10);
    for (std::string& column : columns) fields >> column;
    if (!fields) continue;
    const std::string& remote = columns[2];
    const std::string& state = columns[3];
    const std::string& inode = columns[9];
    std::size_t colon = remote.rfind(':');
    if (state != k_established || colon == std::string::npos) continue;
    try {
      if (std::stoi(remote.substr(colon + 1), nullptr, 16) == port) inodes.insert(inode);
    } catch (const std::exception&) {
      continue;
    }
  }
}

bool holds_one_of(const std::string& fd_dir, const std::set<std::string>& inodes) {
  std::error_code error;
  for (const fs::directory_entry& fd : fs::directory_iterator(fd_dir, error)) {
    std::error_code no_link;
    std::string target = fs::read_symlink(fd.path(), no_link).string();
    // "socket:[12345]"
    if (!target.starts_with("socket:[") || !target.ends_with(']')) continue;
    if (inodes.contains(target.substr(8, target.size() - 9))) return true;
  }
  return false;
}

}  // namespace

std::set<long> connected_to_port(const std::vector<long>& pids, int port,
                                 const std::string& proc_root) {
  std::set<long> connected;
  for (long pid : pids) {
    const std::string dir = proc_root + "/" + std::to_string(pid);
    std::set<std::string> inodes;
    connections_to(dir + "/net/tcp", port, inodes);
    connections_to(dir + "/net/tcp6", port, inodes);
    if (!inodes.empty() && holds_one_of(dir + "/fd", inodes)) connected.insert(pid);
  }
  return connected;
}

StoreArrivals store_arrivals(const std::vector<RankStacks>& ranks, const std::string& store,
                             bool python) {
  std::size_t colon = store.rfind(':');
  if (colon == std::string::npos) return {};
  std::optional<std::int64_t> port = strings::parse_int(store.substr(colon + 1));
  if (!port || *port <= 0) return {};
  std::vector<long> pids;
  pids.reserve(ranks.size());
  for (const RankStacks& rank : ranks) pids.push_back(rank.pid);
  std::set<long> connected = connected_to_port(pids, static_cast<int>(*port));
  std::vector<int> missing;
  for (const RankStacks& rank : ranks) {
    if (!connected.contains(rank.pid)) missing.push_back(rank.rank);
  }
  if (connected.empty() && !missing.empty() && !python) return {};
  std::string line = not_at_store_line(missing, ranks.size(), store);
  return {.missing = std::move(missing), .line = std::move(line)};
}

std::string not_at_store_line(const std::vector<int>& missing, std::size_t total,
                              const std::string& store) {
  if (missing.empty()) return "";
  if (missing.size() == total) {
    return "no rank has connected to the store at " + store +
           " yet: none has reached init_process_group";
  }
  return report::rank_list(missing) + (missing.size() == 1 ? " has" : " have") +
         " not connected to the store at " + store + ": the others wait for " +
         (missing.size() == 1 ? "it" : "them") + " in init_process_group (or a rendezvous)";
}

}  // namespace gangrun::doctor
