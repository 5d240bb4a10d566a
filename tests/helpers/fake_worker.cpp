// fake_worker: a controllable child for gangrun's integration tests.
//
//   fake_worker [--pid-dir DIR] ACTION...
//
// Actions run in order. A condition placed before an action applies to that
// one action only:
//   --only-rank R[,R...]      run the next action only on these ranks (RANK env)
//   --except-rank R[,R...]    run the next action on every other rank
//   --if-restart-below K      run the next action only while TORCHELASTIC_RESTART_COUNT < K
//   --if-restart-at-least K   run the next action only once TORCHELASTIC_RESTART_COUNT >= K
//
// Actions (FILE and TEXT arguments may contain {rank}, {local_rank}, {restart}, {pid}, so a
// test can look for text that appears nowhere in the command line):
//   --print-env FILE          write {"pid","ppid","pgid","sid","cwd","argv":[..],
//                             "env":{..},"error_file_dir_exists":bool} as JSON (atomically)
//   --touch FILE              create FILE (atomically, empty)
//   --append FILE TEXT        append "TEXT\n" to FILE (TEXT is substituted too)
//   --record FILE             append "rank=R local_rank=L restart=C max_restarts=M pid=P\n"
//   --stamp FILE              append "<unix seconds with fraction>\n"
//   --stream out|err          stream used by --echo, --write and --lines (default out)
//   --pad N                   padding of --lines: N characters 'x' (default 32)
//   --lines K                 print K lines "rank=<RANK> line=<i> <padding>" as fast as possible
//   --echo TEXT               print "TEXT\n" and flush
//   --write TEXT              print TEXT without a newline and flush
//   --sleep SECONDS           sleep (signals with handlers are served meanwhile)
//   --wait-file PATH SECONDS  wait until PATH exists; exit 124 when SECONDS pass first
//   --ignore SIG              ignore SIG (TERM, INT, HUP, QUIT, USR1, USR2 or a number)
//   --ignore-term, --ignore-int
//   --on-signal SIG FILE      on SIG append "<sig lowercase> <unix seconds>\n" to FILE; then
//                             TERM/INT/HUP/QUIT kill the worker (unless also --ignore'd),
//                             USR1/USR2 let it go on
//   --on-term FILE, --on-int FILE, --on-usr1 FILE, --on-usr2 FILE
//   --spawn-grandchild        fork a child that sleeps (up to 300 s) in the worker's
//                             process group; its pid goes to DIR/grandchild.<rank>.pid
//   --spawn-setsid-grandchild the same, but the child calls setsid() first; its pid goes to
//                             DIR/setsid_grandchild.<rank>.pid
//   --spawn-daemon            double-fork a daemon (setsid, its parent exits at once, so it is
//                             re-parented to the nearest subreaper); pid in DIR/daemon.<rank>.pid
//   --alloc-mb N              allocate and touch N MiB (kept until exit)
//   --write-error-file MSG    write $TORCHELASTIC_ERROR_FILE as torch's @record does
//   --exit N                  exit with N
//   --signal SIG              reset SIG to its default action and raise it
//   --kill PID SIG            send SIG to PID (for example the launcher, to signal it at a
//                             known point of its work)
//   --restart-fail-until K    exit 1 while TORCHELASTIC_RESTART_COUNT < K
// Without a final --exit/--signal the worker exits 0. Words after "--" are ignored (they
// show up in --print-env's argv).
//
// With --pid-dir the worker writes DIR/worker.<rank>.pid at start and appends its pid to
// DIR/all.pids, so a test can find (and clean up) every process it caused.
//
// Plain C++20 and POSIX on purpose: no project library, so it stays a stand-in for any
// user program.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

// ---- signal bookkeeping: the handler only sets a flag ------------------------

constexpr int k_max_signal = 65;
volatile sig_atomic_t g_pending[k_max_signal] = {};

extern "C" void on_signal(int signal_number) {
  if (signal_number > 0 && signal_number < k_max_signal) {
    g_pending[signal_number] = 1;
  }
}

struct SignalName {
  const char* name;
  int number;
};
constexpr SignalName k_signal_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"ABRT", SIGABRT},
    {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},
    {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"BUS", SIGBUS},   {"XCPU", SIGXCPU}, {"SYS", SIGSYS},
};

[[noreturn]] void die(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "fake_worker: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(99);
}

long parse_long(const std::string& text, const char* what) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0) {
    die(std::string("bad ") + what + ": '" + text + "'");
  }
  return value;
}

int parse_int(const std::string& text, const char* what) {
  const long value = parse_long(text, what);
  if (value < -1000000000L || value > 1000000000L) {
    die(std::string("out of range ") + what + ": '" + text + "'");
  }
  return static_cast<int>(value);
}

double parse_double(const std::string& text, const char* what) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || value < 0) {
    die(std::string("bad ") + what + ": '" + text + "'");
  }
  return value;
}

int parse_signal(std::string text) {
  if (text.rfind("SIG", 0) == 0) {
    text = text.substr(3);
  }
  for (const auto& entry : k_signal_names) {
    if (text == entry.name) {
      return entry.number;
    }
  }
  const int number = parse_int(text, "signal");
  if (number <= 0 || number >= k_max_signal) {
    die("bad signal: '" + text + "'");
  }
  return number;
}

std::string signal_label(int signal_number) {
  for (const auto& entry : k_signal_names) {
    if (entry.number == signal_number) {
      std::string label = entry.name;
      for (auto& c : label) {
        if (c >= 'A' && c <= 'Z') {
          c = static_cast<char>(c - 'A' + 'a');
        }
      }
      return label;
    }
  }
  return "sig" + std::to_string(signal_number);
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string(fallback);
}

std::string now_text() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  char text[64];
  std::snprintf(text, sizeof text, "%lld.%09ld", static_cast<long long>(now.tv_sec), now.tv_nsec);
  return text;
}

// ---- the worker's identity ----------------------------------------------------

struct Identity {
  std::string rank = env_or("RANK", "x");
  std::string local_rank = env_or("LOCAL_RANK", "x");
  std::string restart_text = env_or("TORCHELASTIC_RESTART_COUNT", "0");
  std::string max_restarts = env_or("TORCHELASTIC_MAX_RESTARTS", "x");
  int restart = 0;
};
Identity g_id;

std::string substitute(std::string text) {
  const std::map<std::string, std::string> macros = {
      {"{rank}", g_id.rank},
      {"{local_rank}", g_id.local_rank},
      {"{restart}", g_id.restart_text},
      {"{pid}", std::to_string(getpid())},
  };
  for (const auto& [macro, value] : macros) {
    for (auto pos = text.find(macro); pos != std::string::npos;
         pos = text.find(macro, pos + value.size())) {
      text.replace(pos, macro.size(), value);
    }
  }
  return text;
}

// ---- files ---------------------------------------------------------------------

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      die("write " + path + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

// Writes to PATH.tmp.<pid> then renames, so a polling test never reads half a file.
void write_file_atomically(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    die("open " + tmp + ": " + std::strerror(errno));
  }
  write_all(fd, data, tmp);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    die("rename " + tmp + ": " + std::strerror(errno));
  }
}

// One write() with O_APPEND: short records from several processes never interleave.
void append_file(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    die("open " + path + ": " + std::strerror(errno));
  }
  write_all(fd, data, path);
  ::close(fd);
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(byte));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// ---- state shared by the actions ----------------------------------------------------

std::vector<std::string> g_argv;
std::optional<std::string> g_pid_dir;
std::FILE* g_stream = stdout;
std::string g_pad(32, 'x');
std::map<int, std::string> g_record_file;  // signal -> file that receives its record
std::set<int> g_ignored;                   // signals that must not end the worker
std::vector<std::vector<char>> g_allocations;

void install_handler(int signal_number) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART keeps stdio writes to a pipe from failing with EINTR; the sleeps below
  // are interrupted anyway (nanosleep is never restarted).
  action.sa_flags = SA_RESTART;
  if (sigaction(signal_number, &action, nullptr) != 0) {
    die("sigaction: " + std::string(std::strerror(errno)));
  }
}

[[noreturn]] void die_by_signal(int signal_number) {
  std::fflush(stdout);
  std::fflush(stderr);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal_number);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal_number);
  std::_Exit(128 + signal_number);  // a signal whose default action is to go on
}

bool is_fatal_by_default(int signal_number) {
  return signal_number == SIGTERM || signal_number == SIGINT || signal_number == SIGHUP ||
         signal_number == SIGQUIT;
}

void serve_pending_signals() {
  for (int s = 1; s < k_max_signal; ++s) {
    if (g_pending[s] == 0) {
      continue;
    }
    g_pending[s] = 0;
    if (auto it = g_record_file.find(s); it != g_record_file.end()) {
      append_file(it->second, signal_label(s) + " " + now_text() + "\n");
    }
    if (is_fatal_by_default(s) && !g_ignored.contains(s)) {
      die_by_signal(s);
    }
  }
}

void sleep_for(double seconds) {
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  const auto whole = static_cast<time_t>(seconds);
  deadline.tv_sec += whole;
  deadline.tv_nsec += static_cast<long>((seconds - static_cast<double>(whole)) * 1e9);
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000L;
  }
  for (;;) {
    serve_pending_signals();
    const int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr);
    if (rc == 0) {
      break;
    }
    if (rc != EINTR) {
      die("clock_nanosleep: " + std::string(std::strerror(rc)));
    }
  }
  serve_pending_signals();
}

double monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

std::string pid_file(const std::string& stem) {
  if (!g_pid_dir) {
    die("--" + stem + " needs --pid-dir");
  }
  return *g_pid_dir + "/" + stem + "." + g_id.rank + ".pid";
}

// ---- actions --------------------------------------------------------------------------

void print_env(const std::string& path) {
  std::string json = "{";
  json += "\"pid\": " + std::to_string(getpid());
  json += ", \"ppid\": " + std::to_string(getppid());
  json += ", \"pgid\": " + std::to_string(getpgrp());
  json += ", \"sid\": " + std::to_string(getsid(0));
  char cwd[4096];
  json += ", \"cwd\": " + json_string(getcwd(cwd, sizeof cwd) != nullptr ? cwd : "");
  json += ", \"argv\": [";
  for (std::size_t i = 0; i < g_argv.size(); ++i) {
    json += (i == 0 ? "" : ", ") + json_string(g_argv[i]);
  }
  json += "], \"env\": {";
  bool first = true;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item = *entry;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    json += (first ? "" : ", ") + json_string(item.substr(0, eq)) + ": " +
            json_string(item.substr(eq + 1));
    first = false;
  }
  json += "}";
  bool dir_exists = false;
  if (const char* error_file = std::getenv("TORCHELASTIC_ERROR_FILE");
      error_file != nullptr && *error_file != '\0') {
    std::string dir = error_file;
    const auto slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
    struct stat info {};
    dir_exists = ::stat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  }
  json += std::string(", \"error_file_dir_exists\": ") + (dir_exists ? "true" : "false");
  json += "}\n";
  write_file_atomically(substitute(path), json);
}

void print_lines(long count) {
  const std::string& rank = g_id.rank;
  for (long i = 0; i < count; ++i) {
    std::fprintf(g_stream, "rank=%s line=%ld %s\n", rank.c_str(), i, g_pad.c_str());
  }
  std::fflush(g_stream);
}

void wait_file(const std::string& path, double seconds) {
  const double deadline = monotonic_seconds() + seconds;
  struct stat info {};
  while (::stat(path.c_str(), &info) != 0) {
    if (monotonic_seconds() > deadline) {
      std::fprintf(stderr, "fake_worker: timed out waiting for %s\n", path.c_str());
      std::fflush(stderr);
      std::_Exit(124);
    }
    sleep_for(0.01);
  }
}

void spawn_grandchild(bool new_session) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    die("fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    // Default dispositions, so SIGTERM from gangrun ends it like an ordinary program.
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
      signal(s, SIG_DFL);
    }
    if (new_session && setsid() < 0) {
      std::_Exit(98);
    }
    // Bounded, so a broken test never leaves it behind for long. It keeps the worker's
    // stdout and stderr open, as a real data-loader process would.
    const timespec nap{300, 0};
    nanosleep(&nap, nullptr);
    std::_Exit(0);
  }
  const std::string path = pid_file(new_session ? "setsid_grandchild" : "grandchild");
  write_file_atomically(path, std::to_string(pid) + "\n");
  append_file(*g_pid_dir + "/all.pids", std::to_string(pid) + "\n");
}

// The classic daemon: fork, setsid, fork again and let the middle process exit, so the
// daemon belongs to no worker's group or session and its parent is gone.
void spawn_daemon() {
  std::fflush(stdout);
  std::fflush(stderr);
  int ready[2];
  if (pipe(ready) < 0) {
    die("pipe: " + std::string(std::strerror(errno)));
  }
  const pid_t middle = fork();
  if (middle < 0) {
    die("fork: " + std::string(std::strerror(errno)));
  }
  if (middle == 0) {
    setsid();
    const pid_t daemon = fork();
    if (daemon == 0) {
      close(ready[0]);
      close(ready[1]);
      for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
        signal(s, SIG_DFL);
      }
      const timespec nap{300, 0};
      nanosleep(&nap, nullptr);
      std::_Exit(0);
    }
    const long long reported = daemon;
    (void)!write(ready[1], &reported, sizeof reported);
    std::_Exit(0);
  }
  close(ready[1]);
  long long daemon = -1;
  if (read(ready[0], &daemon, sizeof daemon) != static_cast<ssize_t>(sizeof daemon) ||
      daemon <= 0) {
    die("the daemon did not start");
  }
  close(ready[0]);
  waitpid(middle, nullptr, 0);
  const std::string path = pid_file("daemon");
  write_file_atomically(path, std::to_string(daemon) + "\n");
  append_file(*g_pid_dir + "/all.pids", std::to_string(daemon) + "\n");
}

void write_error_file(const std::string& message) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr,
                 "fake_worker: TORCHELASTIC_ERROR_FILE is not set; no error file written\n");
    std::fflush(stderr);
    return;
  }
  const std::string timestamp = std::to_string(static_cast<long long>(time(nullptr)));
  const std::string callstack =
      R"(Traceback (most recent call last):
  File "fake_worker", line 1, in <module>
)" + message +
      "\n";
  const std::string json = R"({"message": {"message": )" + json_string(message) +
                           R"(, "extraInfo": {"py_callstack": )" + json_string(callstack) +
                           R"(, "timestamp": )" + json_string(timestamp) + "}}}";
  write_file_atomically(path, json);
}

void alloc_mb(long megabytes) {
  if (megabytes < 0) {
    die("bad --alloc-mb");
  }
  std::vector<char> block(static_cast<std::size_t>(megabytes) * 1024U * 1024U);
  for (std::size_t i = 0; i < block.size(); i += 4096) {
    block[i] = 1;
  }
  g_allocations.push_back(std::move(block));
}

// ---- the action language ---------------------------------------------------------------

struct Action {
  std::string name;
  std::vector<std::string> args;
  std::optional<std::set<std::string>> only_ranks;
  std::optional<std::set<std::string>> except_ranks;
  std::optional<int> restart_below;
  std::optional<int> restart_at_least;
};

const std::map<std::string, int> k_arity = {
    {"--print-env", 1},
    {"--touch", 1},
    {"--append", 2},
    {"--record", 1},
    {"--stamp", 1},
    {"--stream", 1},
    {"--pad", 1},
    {"--lines", 1},
    {"--echo", 1},
    {"--write", 1},
    {"--sleep", 1},
    {"--wait-file", 2},
    {"--ignore", 1},
    {"--ignore-term", 0},
    {"--ignore-int", 0},
    {"--on-signal", 2},
    {"--on-term", 1},
    {"--on-int", 1},
    {"--on-usr1", 1},
    {"--on-usr2", 1},
    {"--spawn-grandchild", 0},
    {"--spawn-setsid-grandchild", 0},
    {"--spawn-daemon", 0},
    {"--alloc-mb", 1},
    {"--write-error-file", 1},
    {"--exit", 1},
    {"--signal", 1},
    {"--kill", 2},
    {"--restart-fail-until", 1},
};

std::set<std::string> split_ranks(const std::string& text) {
  std::set<std::string> ranks;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    ranks.insert(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) {
      return ranks;
    }
    start = comma + 1;
  }
}

std::vector<Action> parse(const std::vector<std::string>& args) {
  std::vector<Action> actions;
  Action pending;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) {
        die(word + " needs a value");
      }
      return args[++i];
    };
    if (word == "--") break;  // the rest is ignored: arguments for tests that check what arrived
    if (word == "--pid-dir") {
      g_pid_dir = value();
    } else if (word == "--only-rank") {
      pending.only_ranks = split_ranks(value());
    } else if (word == "--except-rank") {
      pending.except_ranks = split_ranks(value());
    } else if (word == "--if-restart-below") {
      pending.restart_below = parse_int(value(), "--if-restart-below");
    } else if (word == "--if-restart-at-least") {
      pending.restart_at_least = parse_int(value(), "--if-restart-at-least");
    } else if (auto it = k_arity.find(word); it != k_arity.end()) {
      pending.name = word;
      for (int n = 0; n < it->second; ++n) {
        pending.args.push_back(value());
      }
      actions.push_back(pending);
      pending = Action{};
    } else {
      die("unknown action '" + word + "'");
    }
  }
  return actions;
}

bool applies(const Action& action) {
  if (action.only_ranks && action.only_ranks->count(g_id.rank) == 0) {
    return false;
  }
  if (action.except_ranks && action.except_ranks->count(g_id.rank) != 0) {
    return false;
  }
  if (action.restart_below && !(g_id.restart < *action.restart_below)) {
    return false;
  }
  if (action.restart_at_least && !(g_id.restart >= *action.restart_at_least)) {
    return false;
  }
  return true;
}

void record_signal(int signal_number, const std::string& file) {
  g_record_file[signal_number] = substitute(file);
  install_handler(signal_number);
}

void ignore_signal(int signal_number) {
  g_ignored.insert(signal_number);
  install_handler(signal_number);
}

void run(const Action& action) {
  const std::string& name = action.name;
  const auto& a = action.args;
  if (name == "--print-env") {
    print_env(a[0]);
  } else if (name == "--touch") {
    write_file_atomically(substitute(a[0]), "");
  } else if (name == "--append") {
    append_file(substitute(a[0]), substitute(a[1]) + "\n");
  } else if (name == "--record") {
    append_file(substitute(a[0]), "rank=" + g_id.rank + " local_rank=" + g_id.local_rank +
                                      " restart=" + g_id.restart_text +
                                      " max_restarts=" + g_id.max_restarts +
                                      " pid=" + std::to_string(getpid()) + "\n");
  } else if (name == "--stamp") {
    append_file(substitute(a[0]), now_text() + "\n");
  } else if (name == "--stream") {
    if (a[0] != "out" && a[0] != "err") {
      die("--stream takes out or err");
    }
    g_stream = a[0] == "out" ? stdout : stderr;
  } else if (name == "--pad") {
    g_pad.assign(static_cast<std::size_t>(std::max(0, parse_int(a[0], "--pad"))), 'x');
  } else if (name == "--lines") {
    print_lines(parse_long(a[0], "--lines"));
  } else if (name == "--echo") {
    std::fprintf(g_stream, "%s\n", substitute(a[0]).c_str());
    std::fflush(g_stream);
  } else if (name == "--write") {
    std::fputs(substitute(a[0]).c_str(), g_stream);
    std::fflush(g_stream);
  } else if (name == "--sleep") {
    sleep_for(parse_double(a[0], "--sleep"));
  } else if (name == "--wait-file") {
    wait_file(substitute(a[0]), parse_double(a[1], "--wait-file"));
  } else if (name == "--ignore") {
    ignore_signal(parse_signal(a[0]));
  } else if (name == "--ignore-term") {
    ignore_signal(SIGTERM);
  } else if (name == "--ignore-int") {
    ignore_signal(SIGINT);
  } else if (name == "--on-signal") {
    record_signal(parse_signal(a[0]), a[1]);
  } else if (name == "--on-term") {
    record_signal(SIGTERM, a[0]);
  } else if (name == "--on-int") {
    record_signal(SIGINT, a[0]);
  } else if (name == "--on-usr1") {
    record_signal(SIGUSR1, a[0]);
  } else if (name == "--on-usr2") {
    record_signal(SIGUSR2, a[0]);
  } else if (name == "--spawn-grandchild") {
    spawn_grandchild(false);
  } else if (name == "--spawn-setsid-grandchild") {
    spawn_grandchild(true);
  } else if (name == "--spawn-daemon") {
    spawn_daemon();
  } else if (name == "--alloc-mb") {
    alloc_mb(parse_long(a[0], "--alloc-mb"));
  } else if (name == "--write-error-file") {
    write_error_file(substitute(a[0]));
  } else if (name == "--exit") {
    std::fflush(stdout);
    std::fflush(stderr);
    std::exit(parse_int(a[0], "--exit"));
  } else if (name == "--signal") {
    die_by_signal(parse_signal(a[0]));
  } else if (name == "--kill") {
    if (kill(static_cast<pid_t>(parse_long(a[0], "--kill")), parse_signal(a[1])) < 0) {
      die("kill: " + std::string(std::strerror(errno)));
    }
  } else if (name == "--restart-fail-until") {
    if (g_id.restart < parse_int(a[0], "--restart-fail-until")) {
      std::fflush(stdout);
      std::fflush(stderr);
      std::exit(1);
    }
  }
}

char g_stdout_buffer[1 << 20];
char g_stderr_buffer[1 << 20];

}  // namespace

int main(int argc, char** argv) {
  // Big buffers before any output: --lines must be as fast as a chatty trainer.
  std::setvbuf(stdout, g_stdout_buffer, _IOFBF, sizeof g_stdout_buffer);
  std::setvbuf(stderr, g_stderr_buffer, _IOFBF, sizeof g_stderr_buffer);

  g_argv.assign(argv, argv + argc);
  g_id.restart = parse_int(g_id.restart_text, "TORCHELASTIC_RESTART_COUNT");
  const std::vector<Action> actions = parse(g_argv);

  if (g_pid_dir) {
    write_file_atomically(pid_file("worker"), std::to_string(getpid()) + "\n");
    append_file(*g_pid_dir + "/all.pids", std::to_string(getpid()) + "\n");
  }
  for (const Action& action : actions) {
    if (applies(action)) {
      run(action);
    }
    serve_pending_signals();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  serve_pending_signals();
  return 0;
}
