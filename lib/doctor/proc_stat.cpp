#include "doctor/proc_stat.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace gangrun::doctor {

std::vector<std::string> proc_stat_fields(long pid, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  std::size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

std::optional<char> stopped_state(long pid, const std::string& proc_root) {
  std::vector<std::string> fields = proc_stat_fields(pid, proc_root);
  if (fields.empty() || (fields[0] != "T" && fields[0] != "t")) return std::nullopt;
  return fields[0][0];
}

std::optional<double> cpu_seconds_of(const std::vector<std::string>& fields) {
  // [11] utime and [12] stime: fields 14 and 15 of the line, in clock ticks.
  if (fields.size() < 13) return std::nullopt;
  static const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  try {
    return static_cast<double>(std::stoull(fields[11]) + std::stoull(fields[12])) / ticks_per_s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<ProcSample> proc_sample(long pid, const std::string& proc_root) {
  std::vector<std::string> fields = proc_stat_fields(pid, proc_root);
  if (fields.empty() || fields[0].empty()) return std::nullopt;
  std::optional<double> cpu_s = cpu_seconds_of(fields);
  if (!cpu_s) return std::nullopt;
  ProcSample sample;
  sample.state = fields[0][0];
  sample.cpu_s = *cpu_s;
  // "on-CPU ns, runnable-waiting ns, timeslices"
  std::ifstream schedstat(proc_root + "/" + std::to_string(pid) + "/schedstat");
  unsigned long long on_cpu_ns = 0;
  unsigned long long waiting_ns = 0;
  if (schedstat >> on_cpu_ns >> waiting_ns) {
    sample.run_delay_s = static_cast<double>(waiting_ns) / 1e9;
  }
  return sample;
}

std::string stopped_words(char state) {
  if (state == 't') return "stopped by a debugger or another tracer (state t)";
  return std::string("stopped (SIGSTOP or another stop signal; state ") + state + ")";
}

}  // namespace gangrun::doctor
