#include "util/host.hpp"

#include "util/strings.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <system_error>

namespace gangrun::host {

std::string endpoint_text(const std::string& host, const std::string& port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port;
  return host + ":" + port;
}

std::string endpoint_text(const std::string& host, int port) {
  return endpoint_text(host, std::to_string(port));
}
namespace {

// Far above any NR_CPUS a kernel is built with (MAXSMP is 8192); only bounds
// the loop below.
constexpr std::size_t k_most_cpus = 1 << 20;

struct CpuSetFree {
  void operator()(cpu_set_t* set) const { CPU_FREE(set); }
};

// The kernel answers EINVAL when the set is smaller than its own nr_cpu_ids,
// which can exceed both 1024 (a fixed cpu_set_t) and _SC_NPROCESSORS_CONF
// (possible CPUs may outnumber the configured ones), so grow until it fits.
std::optional<std::vector<int>> affinity_cpus() {
  long configured = ::sysconf(_SC_NPROCESSORS_CONF);
  std::size_t count =
      std::max<std::size_t>(configured > 0 ? static_cast<std::size_t>(configured) : 0, 1024);
  for (; count <= k_most_cpus; count *= 2) {
    std::unique_ptr<cpu_set_t, CpuSetFree> set(CPU_ALLOC(count));
    if (!set) return std::nullopt;
    std::size_t size = CPU_ALLOC_SIZE(count);
    CPU_ZERO_S(size, set.get());
    if (::sched_getaffinity(0, size, set.get()) != 0) {
      if (errno == EINVAL) continue;
      return std::nullopt;
    }
    std::vector<int> cpus;
    for (std::size_t cpu = 0; cpu < size * 8; ++cpu) {
      if (CPU_ISSET_S(cpu, size, set.get())) cpus.push_back(static_cast<int>(cpu));
    }
    if (cpus.empty()) return std::nullopt;
    return cpus;
  }
  return std::nullopt;
}

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

std::vector<int> online_cpus() {
  long online = std::max(::sysconf(_SC_NPROCESSORS_ONLN), 1L);
  std::vector<int> cpus;
  for (long cpu = 0; cpu < online; ++cpu) cpus.push_back(static_cast<int>(cpu));
  return cpus;
}

}  // namespace

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

bool resolves_only_to_loopback(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool loopback = true;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family == AF_INET) {
      const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ai_addr);
      loopback = loopback && (ntohl(address->sin_addr.s_addr) >> 24) == 127;
    } else if (entry->ai_family == AF_INET6) {
      const auto* address = reinterpret_cast<const sockaddr_in6*>(entry->ai_addr);
      loopback = loopback && IN6_IS_ADDR_LOOPBACK(&address->sin6_addr);
    }
  }
  ::freeaddrinfo(found);
  return loopback;
}

std::vector<int> usable_cpus() {
  std::vector<int> cpus = affinity_cpus().value_or(std::vector<int>{});
  if (cpus.empty()) cpus = online_cpus();
  return cpus;
}

int usable_cpu_count() { return static_cast<int>(usable_cpus().size()); }

std::optional<int> physical_core_count() {
  for (const char* file : {"core_cpus_list", "thread_siblings_list"}) {
    std::set<std::string> cores = distinct_topology(file);
    if (!cores.empty()) return static_cast<int>(cores.size());
  }
  return std::nullopt;
}

}  // namespace gangrun::host
