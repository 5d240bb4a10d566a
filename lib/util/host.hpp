// Facts about this host that several modules need, read one way only.
#pragma once

#include <string>
#include <vector>

namespace gangrun::host {

// This host's name as gethostname() gives it; "localhost" when it fails or
// is empty.
std::string host_name();

// The CPUs this process may run on (its affinity mask), in increasing
// order, however many the kernel supports (a fixed cpu_set_t stops at 1024);
// every online CPU when the mask cannot be read. Never empty.
std::vector<int> usable_cpus();

// usable_cpus().size(): what "one worker per CPU" counts.
int usable_cpu_count();

}  // namespace gangrun::host
