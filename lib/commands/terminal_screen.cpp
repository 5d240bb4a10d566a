#include "commands/terminal_screen.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <string>

namespace gangrun::commands {

namespace {

// Written by the signal handlers, read by wait_until: 'q' for a stop
// signal, 'w' for a resize.
int g_signal_pipe[2] = {-1, -1};
struct termios g_saved_terminal {};

void on_signal(int signal) {
  const char byte = signal == SIGWINCH ? 'w' : 'q';
  const int saved = errno;
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

void write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::optional<ScreenSize> terminal_size() {
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) == 0 || ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0 ||
      size.ws_col == 0) {
    return std::nullopt;
  }
  return ScreenSize{.columns = size.ws_col, .rows = size.ws_row};
}

TerminalScreen::TerminalScreen() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_signal_pipe[0] = -1;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) ::sigaction(signal, &action, nullptr);
  if (::isatty(STDIN_FILENO) != 0 && ::tcgetattr(STDIN_FILENO, &g_saved_terminal) == 0) {
    struct termios raw = g_saved_terminal;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    raw_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  write_all("\x1b[?1049h\x1b[?25l");  // the alternate screen, the cursor hidden
}

TerminalScreen::~TerminalScreen() {
  write_all("\x1b[?25h\x1b[?1049l");
  if (raw_) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_terminal);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) ::sigaction(signal, &action, nullptr);
}

TerminalScreen::Event TerminalScreen::wait_until(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Event::timeout;
    struct pollfd watched[2] = {{.fd = g_signal_pipe[0], .events = POLLIN, .revents = 0},
                                {.fd = raw_ ? STDIN_FILENO : -1, .events = POLLIN, .revents = 0}};
    int ready = ::poll(watched, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return Event::quit;
    if (ready <= 0) continue;
    if ((watched[0].revents & POLLIN) != 0) {
      char bytes[16];
      ssize_t n = ::read(g_signal_pipe[0], bytes, sizeof bytes);
      if (std::find(bytes, bytes + std::max<ssize_t>(n, 0), 'q') != bytes + std::max<ssize_t>(n, 0))
        return Event::quit;
      if (n > 0) return Event::resized;
    }
    if ((watched[1].revents & (POLLIN | POLLHUP)) != 0) {
      char key = 0;
      ssize_t n = ::read(STDIN_FILENO, &key, 1);
      if (n == 0 && (watched[1].revents & POLLHUP) != 0) return Event::quit;  // the terminal went
      if (n == 1 && (key == 'q' || key == 'Q')) return Event::quit;
    }
  }
}

void TerminalScreen::draw(const std::string& frame) {
  // From the top left, each line's rest and the lines below cleared.
  std::string out = "\x1b[H";
  std::size_t start = 0;
  while (start < frame.size()) {
    std::size_t end = frame.find('\n', start);
    if (end == std::string::npos) end = frame.size();
    out += frame.substr(start, end - start) + "\x1b[K";
    start = end + 1;
    if (start < frame.size()) out += "\r\n";
  }
  out += "\x1b[J";
  write_all(out);
}

}  // namespace gangrun::commands
