#include "probe/probe_mode.hpp"

#include "accel/cuda_backend.hpp"
#include "accel/level_zero_backend.hpp"
#include "accel/report_json.hpp"
#include "logmux/write_all.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <utility>

namespace gangrun::probe {
namespace {

// Built on first use, so that static initializers of other files may
// register probes whatever order they run in.
std::map<std::string, Probe, std::less<>>& probes() {
  static std::map<std::string, Probe, std::less<>> registry = {
      {std::string(k_cuda_probe), accel::probe_cuda},
      {std::string(k_level_zero_probe), accel::probe_level_zero},
  };
  return registry;
}

[[noreturn]] void leave(int status, const char* why) {
  if (why != nullptr) std::fprintf(stderr, "gangrun %s: %s\n", k_probe_mode_flag.data(), why);
  std::fflush(stderr);
  ::_exit(status);
}

}  // namespace

void register_probe(std::string name, Probe probe) { probes()[std::move(name)] = probe; }

bool is_probe_mode(int argc, char** argv) {
  return argc >= 2 && argv[1] != nullptr && std::string_view(argv[1]) == k_probe_mode_flag;
}

void run_probe_mode(int argc, char** argv) {
  if (argc != 3) leave(2, "expects one probe name");
  auto probe = probes().find(std::string_view(argv[2]));
  if (probe == probes().end()) leave(2, "no such probe");
  // The report keeps the pipe; whatever the driver prints goes to stderr.
  int report_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (report_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) leave(1, "cannot set up stdout");
  std::string report;
  try {
    report = accel::report_to_json(probe->second(current_environment()));
  } catch (...) {
    leave(2, nullptr);
  }
  std::fflush(stdout);
  if (logmux::write_all(report_fd, report) != 0) leave(1, nullptr);
  leave(0, nullptr);
}

}  // namespace gangrun::probe
