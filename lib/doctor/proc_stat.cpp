#include "doctor/proc_stat.hpp"

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

std::string stopped_words(char state) {
  if (state == 't') return "stopped by a debugger or another tracer (state t)";
  return std::string("stopped (SIGSTOP or another stop signal; state ") + state + ")";
}

}  // namespace gangrun::doctor
