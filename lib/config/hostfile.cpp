#include "config/hostfile.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace gangrun::config {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// deepspeed's pattern ^(\S+)\s+slots=(\d+) on a stripped line; nullopt
// when the line does not match.
std::optional<HostfileEntry> match_line(std::string_view line) {
  std::size_t name_end = 0;
  while (name_end < line.size() && !is_space(line[name_end])) ++name_end;
  std::size_t rest = name_end;
  while (rest < line.size() && is_space(line[rest])) ++rest;
  if (name_end == 0 || rest == name_end) return std::nullopt;
  std::string_view tail = line.substr(rest);
  if (tail.substr(0, 6) != "slots=") return std::nullopt;
  tail.remove_prefix(6);
  std::size_t digits = 0;
  while (digits < tail.size() && tail[digits] >= '0' && tail[digits] <= '9') ++digits;
  if (digits == 0 || digits > 7) return std::nullopt;
  std::optional<std::int64_t> slots = strings::parse_int(tail.substr(0, digits));
  if (!slots) return std::nullopt;
  return HostfileEntry{.host = std::string(line.substr(0, name_end)),
                       .slots = static_cast<int>(*slots)};
}

// deepspeed's parse_node_config_list: host -> sorted unique slots; an
// empty list means the whole host.
Expected<std::vector<std::pair<std::string, std::vector<int>>>> parse_node_specs(
    std::string_view spec, std::string_view flag) {
  std::vector<std::pair<std::string, std::vector<int>>> nodes;
  for (const std::string& node_spec : strings::split(spec, '@')) {
    std::string_view entry = strings::trim(node_spec);
    std::size_t colon = entry.find(':');
    std::string host(strings::trim(entry.substr(0, colon)));
    if (host.empty()) {
      return fail_usage(std::string(flag) + " " + strings::quoted(spec) +
                        ": every entry needs a host name, as in worker-1:0,2");
    }
    auto found = std::find_if(nodes.begin(), nodes.end(),
                              [&](const auto& node) { return node.first == host; });
    if (found == nodes.end()) found = nodes.insert(nodes.end(), {host, {}});
    if (colon == std::string_view::npos) continue;
    for (const std::string& slot_text : strings::split(entry.substr(colon + 1), ',')) {
      std::optional<std::int64_t> slot = strings::parse_int(strings::trim(slot_text));
      if (!slot || *slot < 0 || *slot > 1'000'000) {
        return fail_usage(std::string(flag) + " " + strings::quoted(spec) + ": " +
                          strings::quoted(slot_text) + " is not a slot (expected 0, 1, 2, ...)");
      }
      found->second.push_back(static_cast<int>(*slot));
    }
  }
  for (auto& node : nodes) {
    std::sort(node.second.begin(), node.second.end());
    node.second.erase(std::unique(node.second.begin(), node.second.end()), node.second.end());
  }
  return nodes;
}

std::vector<int> first_ids(int count) {
  std::vector<int> ids;
  for (int i = 0; i < count; ++i) ids.push_back(i);
  return ids;
}

}  // namespace

Expected<std::vector<HostfileEntry>> parse_hostfile(std::string_view text, std::string_view name) {
  std::vector<HostfileEntry> entries;
  int line_number = 0;
  for (const std::string& raw : strings::split(text, '\n')) {
    ++line_number;
    std::string_view line = strings::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    std::string where = std::string(name) + ":" + std::to_string(line_number);
    std::optional<HostfileEntry> entry = match_line(line);
    if (!entry) {
      return fail_usage(where + ": " + strings::quoted(line) +
                        " is not a hostfile line (expected 'HOST slots=N', as deepspeed reads)");
    }
    for (const HostfileEntry& earlier : entries) {
      if (earlier.host == entry->host) {
        return fail_usage(where + ": host " + strings::quoted(entry->host) +
                          " is already named on line " + std::to_string(earlier.line) +
                          " (deepspeed refuses a host named twice)");
      }
    }
    entry->line = line_number;
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) {
    return fail_usage(std::string(name) + ": names no host (expected 'HOST slots=N' lines)");
  }
  return entries;
}

Expected<std::vector<HostfileEntry>> read_hostfile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return fail_usage("cannot read the hostfile " + strings::quoted(path) + ": " +
                      std::strerror(errno));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return parse_hostfile(text.str(), path);
}

Expected<std::vector<HostSlots>> filter_hosts(const std::vector<HostfileEntry>& entries,
                                              const std::optional<std::string>& include,
                                              const std::optional<std::string>& exclude) {
  if (include && exclude) {
    return fail_usage("--include and --exclude cannot be combined (as in deepspeed)");
  }
  std::map<std::string, std::vector<int>, std::less<>> kept;
  for (const HostfileEntry& entry : entries) {
    if (!include) kept[entry.host] = first_ids(entry.slots);
  }
  if (include || exclude) {
    const std::string& spec = include ? *include : *exclude;
    std::string flag = include ? "--include" : "--exclude";
    GANGRUN_TRY_ASSIGN(nodes, parse_node_specs(spec, flag));
    for (const auto& [host, slots] : *nodes) {
      auto entry = std::find_if(entries.begin(), entries.end(),
                                [&](const HostfileEntry& e) { return e.host == host; });
      if (entry == entries.end()) {
        return fail_usage(flag + " " + strings::quoted(spec) + ": host " + strings::quoted(host) +
                          " is not in the hostfile");
      }
      for (int slot : slots) {
        if (slot >= entry->slots) {
          return fail_usage(flag + " " + strings::quoted(spec) + ": host " + strings::quoted(host) +
                            " has no slot " + std::to_string(slot) +
                            " (the hostfile gives it slots=" + std::to_string(entry->slots) + ")");
        }
      }
      std::vector<int> all = first_ids(entry->slots);
      if (include) {
        kept[host] = slots.empty() ? all : slots;
      } else if (slots.empty()) {
        kept[host].clear();
      } else {
        std::erase_if(kept[host], [&](int id) {
          return std::find(slots.begin(), slots.end(), id) != slots.end();
        });
      }
    }
  }
  std::vector<HostSlots> hosts;
  for (const HostfileEntry& entry : entries) {
    auto found = kept.find(entry.host);
    if (found != kept.end() && !found->second.empty()) hosts.push_back({entry.host, found->second});
  }
  if (hosts.empty()) return fail_usage("the hostfile's filters leave no host to run on");
  return hosts;
}

Expected<std::vector<HostSlots>> limit_hosts(std::vector<HostSlots> hosts,
                                             std::optional<int> num_nodes,
                                             std::optional<int> num_gpus) {
  if (num_nodes) {
    if (static_cast<std::size_t>(*num_nodes) > hosts.size()) {
      return fail_usage("--num_nodes " + std::to_string(*num_nodes) + ": the hostfile gives " +
                        std::to_string(hosts.size()) + " host(s)");
    }
    hosts.resize(static_cast<std::size_t>(*num_nodes));
  }
  if (num_gpus) {
    for (HostSlots& host : hosts) host.slots = first_ids(*num_gpus);
  }
  return hosts;
}

std::optional<std::string> device_include(const HostSlots& host, Accelerator accelerator) {
  const bool first_ids = host.slots.back() == static_cast<int>(host.slots.size()) - 1;
  if (first_ids || accelerator == Accelerator::cpu) return std::nullopt;
  return "localhost:" + strings::join_numbers(host.slots, ",");
}

}  // namespace gangrun::config
