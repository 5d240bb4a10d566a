#include "accel/cpu_backend.hpp"

#include "util/strings.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

namespace gangrun::accel {
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

std::vector<int> online_cpus() {
  long online = std::max(::sysconf(_SC_NPROCESSORS_ONLN), 1L);
  std::vector<int> cpus;
  for (long cpu = 0; cpu < online; ++cpu) cpus.push_back(static_cast<int>(cpu));
  return cpus;
}

std::string read_cpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string machine_name() {
  struct utsname names {};
  if (::uname(&names) != 0) return {};
  return names.machine;
}

}  // namespace

BackendReport probe_cpu() {
  std::vector<int> cpus = affinity_cpus().value_or(std::vector<int>{});
  if (cpus.empty()) cpus = online_cpus();
  return cpu_report(cpus, cpuinfo_model_name(read_cpuinfo()), machine_name());
}

BackendReport cpu_report(const std::vector<int>& cpus, const std::string& model,
                         const std::string& machine) {
  BackendReport report;
  report.kind = DeviceKind::cpu;
  for (int cpu : cpus) {
    Device device;
    device.kind = DeviceKind::cpu;
    device.index = cpu;
    device.name = model;
    device.architecture = machine;
    report.devices.push_back(std::move(device));
  }
  return report;
}

std::string cpuinfo_model_name(std::string_view cpuinfo) {
  for (const std::string& line : strings::split(cpuinfo, '\n')) {
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (strings::trim(std::string_view(line).substr(0, colon)) != "model name") continue;
    return std::string(strings::trim(std::string_view(line).substr(colon + 1)));
  }
  return {};
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t first = 0; first < cpus.size();) {
    std::size_t last = first;
    while (last + 1 < cpus.size() &&
           static_cast<long long>(cpus[last + 1]) == static_cast<long long>(cpus[last]) + 1) {
      ++last;
    }
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[first]);
    if (last > first) text += "-" + std::to_string(cpus[last]);
    first = last + 1;
  }
  return text;
}

}  // namespace gangrun::accel
