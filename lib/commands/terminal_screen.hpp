// The terminal while `gangrun top` draws on it: keys read one at a time
// without echo, the cursor hidden, the alternate screen (so the shell's
// screen comes back), all undone when the screen is destroyed, also after
// SIGINT, SIGTERM or SIGHUP, which end the wait instead of the process.
// SIGWINCH asks for a redraw at the new size.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace gangrun::commands {

struct ScreenSize {
  int columns = 80;
  int rows = 24;
};

// stdout's size (TIOCGWINSZ); nullopt when it is not a terminal.
std::optional<ScreenSize> terminal_size();

class TerminalScreen {
 public:
  // Takes the terminal over; stdin may be a terminal or not (then no keys).
  TerminalScreen();
  TerminalScreen(const TerminalScreen&) = delete;
  TerminalScreen& operator=(const TerminalScreen&) = delete;
  ~TerminalScreen();

  enum class Event { timeout, quit, resized };
  // Waits until `deadline` for q (or Q), a stop signal or a resize.
  Event wait_until(std::chrono::steady_clock::time_point deadline);
  // The lines drawn from the top left, what was there before cleared.
  void draw(const std::string& frame);

 private:
  bool raw_ = false;
};

}  // namespace gangrun::commands
