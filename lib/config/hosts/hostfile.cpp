#include "config/hosts/hostfile.hpp"

#include "config/config_file.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

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

// A line of the hostfile, or why it is not one. A host name goes to ssh as
// its destination and to the workers as MASTER_ADDR: a control character (a
// NUL would cut it short) or a leading '-' (ssh would take it for an option)
// is never part of a real host's name.
Expected<HostfileEntry> checked_line(std::string_view line, const std::string& where) {
  const auto* control = std::find_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) < 0x20 && !is_space(c)) || c == 0x7f;
  });
  if (control != line.end()) {
    const std::string what =
        *control == '\0' ? "a NUL character"
                         : "a control character (byte " + std::to_string(int{*control}) + ")";
    return fail_usage(where + ": the line contains " + what +
                      "; a hostfile is text, 'HOST slots=N' per line");
  }
  std::optional<HostfileEntry> entry = match_line(line);
  if (!entry) {
    return fail_usage(where + ": " + strings::quoted(line) +
                      " is not a hostfile line (expected 'HOST slots=N', as deepspeed reads)");
  }
  if (entry->host.starts_with('-')) {
    return fail_usage(where + ": host " + strings::quoted(entry->host) +
                      " starts with '-', which ssh would read as an option; no host name does");
  }
  return std::move(*entry);
}

std::vector<int> first_ids(int count) {
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) ids.push_back(i);
  return ids;
}

}  // namespace

Expected<std::vector<HostfileEntry>> parse_hostfile(std::string_view text, std::string_view name) {
  std::vector<HostfileEntry> entries;
  // Views into `text`, which outlives the loop: a hash set keeps the check
  // for a host named twice linear (a list walked per line took 13 s for
  // 100,000 hosts).
  std::unordered_map<std::string_view, int> line_of_host;
  std::int64_t total_slots = 0;
  Lines lines(text);
  while (std::optional<std::string_view> raw = lines.next()) {
    std::string_view line = strings::trim(*raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = std::string(name) + ":" + std::to_string(lines.number());
    GANGRUN_TRY_ASSIGN(entry, checked_line(line, where));
    auto [earlier, first] =
        line_of_host.emplace(line.substr(0, entry->host.size()), lines.number());
    if (!first) {
      return fail_usage(where + ": host " + strings::quoted(entry->host) +
                        " is already named on line " + std::to_string(earlier->second) +
                        " (deepspeed refuses a host named twice)");
    }
    total_slots += entry->slots;
    if (total_slots > k_max_hostfile_slots) {
      return fail_usage(where + ": the hostfile gives more than " +
                        std::to_string(k_max_hostfile_slots) +
                        " slots in all, one worker each; no job is that large");
    }
    entry->line = lines.number();
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) {
    return fail_usage(std::string(name) + ": names no host (expected 'HOST slots=N' lines)");
  }
  return entries;
}

Expected<std::vector<HostfileEntry>> read_hostfile(const std::string& path) {
  // 16 MiB: deepspeed's lines are 20 to 80 bytes, so this is several hundred
  // thousand hosts, more than any cluster has, while /dev/zero, a runaway
  // generator or a wrong file is refused before it costs memory or time.
  static constexpr UserFileKind k_hostfile{.name = "the hostfile",
                                           .reads = "-H/--hostfile reads 'HOST slots=N' lines",
                                           .max_bytes = k_max_hostfile_bytes,
                                           .holds = "a hostfile has one short line per host"};
  GANGRUN_TRY_ASSIGN(text, read_user_file(path, k_hostfile));
  return parse_hostfile(*text, path);
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
                                [&host = host](const HostfileEntry& e) { return e.host == host; });
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
        std::erase_if(kept[host], [&slots = slots](int id) {
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
  // The hostfile's own cap on slots holds for --num_gpus too: each host gets
  // ids 0..N-1 whatever its slots, and a huge N asked for gigabytes.
  if (num_gpus && std::int64_t{*num_gpus} * std::ssize(hosts) > k_max_hostfile_slots) {
    return fail_usage("--num_gpus " + std::to_string(*num_gpus) + " on each of " +
                      std::to_string(hosts.size()) + " host(s) is more than " +
                      std::to_string(k_max_hostfile_slots) + " workers in all");
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
