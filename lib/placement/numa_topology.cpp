#include "placement/numa_topology.hpp"

#include "util/strings.hpp"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

namespace gangrun::placement {
namespace {

namespace fs = std::filesystem;

// What every failure to read the topology says after the file's name.
constexpr std::string_view k_what_to_do =
    "--numa_binding reads the CPU topology from /sys; run where it is complete, or leave "
    "--numa_binding out";

Expected<std::string> read_text(const fs::path& file) {
  std::ifstream in(file);
  if (!in) {
    std::error_code error;
    std::string why = fs::exists(file, error) ? "cannot be read" : "does not exist";
    return fail_usage(file.string() + " " + why + "; " + std::string(k_what_to_do));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Expected<int> read_number(const fs::path& file) {
  GANGRUN_TRY_ASSIGN(text, read_text(file));
  std::string_view word = strings::trim(*text);
  int value = 0;
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) {
    return fail_usage(file.string() + " holds " + strings::quoted(word) + ", not a number; " +
                      std::string(k_what_to_do));
  }
  return value;
}

Expected<std::set<int>> read_cpu_list(const fs::path& file, bool may_be_empty = false) {
  GANGRUN_TRY_ASSIGN(text, read_text(file));
  auto cpus = parse_cpu_list(*text);
  if (!cpus) {
    return fail_usage(file.string() + ": " + cpus.error().message() + "; " +
                      std::string(k_what_to_do));
  }
  if (cpus->empty() && !may_be_empty) {
    return fail_usage(file.string() + " lists no CPU; " + std::string(k_what_to_do));
  }
  return *cpus;
}

Expected<int> parse_index(std::string_view word, std::string_view whole) {
  int value = 0;
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || error != std::errc() || end != word.data() + word.size() || value < 0) {
    return fail_usage(strings::quoted(whole) + " is not a CPU list (e.g. 0-3,8)");
  }
  return value;
}

// The number after prefix in a directory's name ("node12" -> 12); -1 when
// the name is not prefix and digits.
int numbered(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int value = 0;
  auto [end, error] =
      std::from_chars(name.data() + prefix.size(), name.data() + name.size(), value);
  return error == std::errc() && end == name.data() + name.size() ? value : -1;
}

}  // namespace

Expected<std::set<int>> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  std::string_view rest = strings::trim(text);
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = strings::trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::size_t dash = item.find('-');
    GANGRUN_TRY_ASSIGN(first, parse_index(item.substr(0, dash), text));
    int last = *first;
    if (dash != std::string_view::npos) {
      GANGRUN_TRY_ASSIGN(end, parse_index(item.substr(dash + 1), text));
      if (*end < *first) return fail_usage(strings::quoted(text) + " has a range that runs down");
      last = *end;
    }
    for (int cpu = *first; cpu <= last; ++cpu) cpus.insert(cpu);
  }
  return cpus;
}

std::string pci_text(const accel::PciAddress& pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.device,
                pci.function);
  return text;
}

Expected<int> NumaTopology::node_of_device(const accel::PciAddress& pci) const {
  GANGRUN_TRY_ASSIGN(node,
                     read_number(root_ / "sys/bus/pci/devices" / pci_text(pci) / "numa_node"));
  return *node < 0 ? 0 : *node;
}

Expected<std::set<int>> NumaTopology::node_cpus(int node) const {
  return read_cpu_list(
      root_ / "sys/devices/system/node" / ("node" + std::to_string(node)) / "cpulist",
      /*may_be_empty=*/true);  // a node of memory only has no CPU
}

Expected<std::vector<int>> NumaTopology::nodes() const {
  fs::path dir = root_ / "sys/devices/system/node";
  std::error_code error;
  std::set<int> found;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    int node = numbered(entry.path().filename().string(), "node");
    if (node >= 0) found.insert(node);
  }
  if (found.empty()) {
    return fail_usage(dir.string() + " lists no NUMA node; " + std::string(k_what_to_do));
  }
  return std::vector<int>(found.begin(), found.end());
}

fs::path NumaTopology::cpu_dir(int cpu) const {
  return root_ / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu));
}

Expected<int> NumaTopology::socket_of(int cpu) const {
  return read_number(cpu_dir(cpu) / "topology/physical_package_id");
}

Expected<std::set<int>> NumaTopology::core_of(int cpu) const {
  return read_cpu_list(cpu_dir(cpu) / "topology/thread_siblings_list");
}

Expected<std::set<int>> NumaTopology::last_level_cache_of(int cpu) const {
  fs::path dir = cpu_dir(cpu) / "cache";
  std::error_code error;
  int best_level = -1;
  std::set<int> sharing;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (numbered(entry.path().filename().string(), "index") < 0) continue;
    // Instruction caches are per core; only a cache of data tells which
    // cores share memory traffic.
    GANGRUN_TRY_ASSIGN(type, read_text(entry.path() / "type"));
    std::string_view kind = strings::trim(*type);
    if (kind != "Data" && kind != "Unified") continue;
    GANGRUN_TRY_ASSIGN(level, read_number(entry.path() / "level"));
    if (*level <= best_level) continue;
    GANGRUN_TRY_ASSIGN(cpus, read_cpu_list(entry.path() / "shared_cpu_list"));
    best_level = *level;
    sharing = std::move(*cpus);
  }
  if (best_level < 0) {
    return fail_usage(dir.string() +
                      " lists no data cache (index*/type, level, shared_cpu_list); " +
                      std::string(k_what_to_do));
  }
  return sharing;
}

}  // namespace gangrun::placement
