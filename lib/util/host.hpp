// Facts about this host that several modules need, read one way only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gangrun::host {

// An endpoint as people and URLs write it: "127.0.0.1:29500", "node1:29500",
// and an IPv6 address in brackets, "[::1]:29500".
std::string endpoint_text(const std::string& host, const std::string& port);
std::string endpoint_text(const std::string& host, int port);

// This host's name as gethostname() gives it; "localhost" when it fails or
// is empty.
std::string host_name();

// Whether name (a host name or an address literal) resolves, and only to
// loopback addresses (127.0.0.0/8, ::1). On some distributions a host's own
// name does (Debian maps it to 127.0.1.1), though other hosts reach it
// elsewhere.
bool resolves_only_to_loopback(const std::string& name);

// The CPUs this process may run on (its affinity mask), in increasing
// order, however many the kernel supports (a fixed cpu_set_t stops at 1024);
// every online CPU when the mask cannot be read. Never empty.
std::vector<int> usable_cpus();

// usable_cpus().size(): what "one worker per CPU" counts.
int usable_cpu_count();

// The number of physical cores as psutil.cpu_count(logical=False) counts
// them on Linux, which accelerate and deepspeed share out among their
// workers: the distinct core_cpus_list (else thread_siblings_list) of
// /sys/devices/system/cpu/cpu*/topology; nullopt when /sys tells nothing.
std::optional<int> physical_core_count();

}  // namespace gangrun::host
