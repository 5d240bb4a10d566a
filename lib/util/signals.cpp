#include "util/signals.hpp"

#include "util/strings.hpp"

#include <csignal>
#include <cstring>

namespace gangrun::signals {
namespace {

struct Entry {
  const char* name;
  int number;
};

// The standard Linux signals; sigabbrev_np() is glibc 2.32+, and its absence
// elsewhere is not worth a build check for 31 rows.
constexpr Entry k_signals[] = {
    {"SIGHUP", SIGHUP},
    {"SIGINT", SIGINT},
    {"SIGQUIT", SIGQUIT},
    {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP},
    {"SIGABRT", SIGABRT},
    {"SIGBUS", SIGBUS},
    {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL},
    {"SIGUSR1", SIGUSR1},
    {"SIGSEGV", SIGSEGV},
    {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE},
    {"SIGALRM", SIGALRM},
    {"SIGTERM", SIGTERM},
    {"SIGSTKFLT", SIGSTKFLT},
    {"SIGCHLD", SIGCHLD},
    {"SIGCONT", SIGCONT},
    {"SIGSTOP", SIGSTOP},
    {"SIGTSTP", SIGTSTP},
    {"SIGTTIN", SIGTTIN},
    {"SIGTTOU", SIGTTOU},
    {"SIGURG", SIGURG},
    {"SIGXCPU", SIGXCPU},
    {"SIGXFSZ", SIGXFSZ},
    {"SIGVTALRM", SIGVTALRM},
    {"SIGPROF", SIGPROF},
    {"SIGWINCH", SIGWINCH},
    {"SIGIO", SIGIO},
    {"SIGPWR", SIGPWR},
    {"SIGSYS", SIGSYS},
    // Aliases, after the names above so that name() prefers those.
    {"SIGIOT", SIGIOT},
    {"SIGCLD", SIGCHLD},
    {"SIGPOLL", SIGPOLL},
};

}  // namespace

std::string name(int signal_number) {
  for (const Entry& entry : k_signals) {
    if (entry.number == signal_number) return entry.name;
  }
  return "SIG" + std::to_string(signal_number);
}

std::optional<int> from_text(std::string_view text) {
  std::string upper = strings::to_upper(strings::trim(text));
  if (auto number = strings::parse_int(upper)) {
    if (*number > 0 && *number < NSIG) return static_cast<int>(*number);
    return std::nullopt;
  }
  if (upper.rfind("SIG", 0) != 0) upper = "SIG" + upper;
  for (const Entry& entry : k_signals) {
    if (upper == entry.name) return entry.number;
  }
  return std::nullopt;
}

}  // namespace gangrun::signals
