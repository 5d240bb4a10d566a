#include "accel/cpu_backend.hpp"

#include "util/host.hpp"
#include "util/strings.hpp"

#include <sys/utsname.h>

#include <fstream>
#include <iterator>

namespace gangrun::accel {
namespace {

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
  return cpu_report(host::usable_cpus(), cpuinfo_model_name(read_cpuinfo()), machine_name());
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
