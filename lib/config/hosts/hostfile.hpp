// deepspeed's hostfile (`host slots=N` lines) and its host filters
// (--include/--exclude `host:slot,slot@host`, --num_nodes, --num_gpus),
// with deepspeed's meaning (deepspeed/launcher/runner.py). Pure.
#pragma once

#include "config/hosts/hosts_settings.hpp"
#include "config/options.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::config {

// One line of a hostfile.
struct HostfileEntry {
  std::string host;
  int slots = 0;
  int line = 0;  // 1-based, for messages
  bool operator==(const HostfileEntry&) const = default;
};

// The largest hostfile read (read_hostfile says why this much).
inline constexpr std::size_t k_max_hostfile_bytes = 16 * 1024 * 1024;

// The most slots a hostfile may give in all: a worker each, far more than
// any job, and small enough that the slot lists built from them stay a few
// MiB (a hostfile of many "HOST slots=9999999" lines would otherwise ask for
// terabytes).
inline constexpr std::int64_t k_max_hostfile_slots = std::int64_t{1} << 20;

// Parses hostfile text: `NAME slots=N` per line (text after N is ignored,
// as deepspeed's pattern does), `#` comment lines and blank lines skipped.
// Usage errors name `name:LINE`: any other line, a line with a control
// character (a NUL among them), a host name starting with '-', a host named
// twice, more than k_max_hostfile_slots slots in all, a file naming no
// host. Linear in the size of the text.
Expected<std::vector<HostfileEntry>> parse_hostfile(std::string_view text, std::string_view name);

// Reads (read_user_file in config_file.hpp: a regular file of at most
// k_max_hostfile_bytes; a FIFO, a pipe, a device is refused at once) and
// parses the file at path. Usage errors name the file: those of the reader,
// and parse_hostfile's.
Expected<std::vector<HostfileEntry>> read_hostfile(const std::string& path);

// The hosts and device ids to use, in hostfile order: every slot of every
// host, narrowed by --include or --exclude (NODE_SPEC[@NODE_SPEC...],
// NODE_SPEC = NAME[:SLOT[,SLOT...]], a bare name meaning all its slots).
// Hosts left without slots are dropped. Usage errors: both filters, a host
// or slot the hostfile does not have, a malformed slot, nothing left.
Expected<std::vector<HostSlots>> filter_hosts(const std::vector<HostfileEntry>& entries,
                                              const std::optional<std::string>& include,
                                              const std::optional<std::string>& exclude);

// deepspeed's --num_nodes (the first N hosts) and --num_gpus (device ids
// 0..N-1 on every host), applied after the filters. Usage error when
// num_nodes asks for more hosts than there are, or num_gpus on every host
// gives more than k_max_hostfile_slots workers in all.
Expected<std::vector<HostSlots>> limit_hosts(std::vector<HostSlots> hosts,
                                             std::optional<int> num_nodes,
                                             std::optional<int> num_gpus);

// The --include that gives a host's gangrun the devices its slots name, when
// they are not the first ids (0..N-1, which N workers use anyway); nullopt
// then, and on CPUs (--accelerator cpu), where a slot is only a worker.
std::optional<std::string> device_include(const HostSlots& host, Accelerator accelerator);

}  // namespace gangrun::config
