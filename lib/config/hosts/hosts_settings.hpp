// What hostfiles and starting gangrun on other hosts asked for, typed (Options::hosts).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gangrun::config {

// One host of a hostfile after --include/--exclude/--num_nodes/--num_gpus:
// the name ssh reaches it by and the device ids (deepspeed's slots) to use there.
struct HostSlots {
  std::string host;
  std::vector<int> slots;  // ascending ids as the filters left them, never empty
  bool operator==(const HostSlots&) const = default;
};

struct HostsSettings {
  std::optional<std::string> hostfile;  // -H/--hostfile FILE
  // The hosts to run on, in hostfile order (node rank order); empty without a hostfile.
  std::vector<HostSlots> hosts;
  std::optional<int> ssh_port;  // --ssh_port: ssh -p PORT
  bool no_ssh_check = false;    // accepted: gangrun checks ssh by starting the job itself

  bool operator==(const HostsSettings&) const = default;
};

}  // namespace gangrun::config
