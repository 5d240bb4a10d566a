// gangrun's own messages: spdlog to stderr, each line marked "gangrun:".
// The only place that configures spdlog sinks.
#pragma once

#include "config/options.hpp"
#include "logmux/console.hpp"

namespace gangrun::logging {

// Before options are known: warnings and errors, no color.
void setup_default_logging();
// verbosity: -1 quiet (errors only), 0 info, 1 debug, 2+ trace.
void setup_logging(int verbosity, config::ColorMode color);

// While a job runs, gangrun's messages are queued on the console (behind
// the worker lines already there) instead of written to stderr, so a stalled
// reader of stderr never blocks the event loop and messages keep their
// place among the workers' lines. nullptr writes directly again. Event-loop
// thread only, like the console; the console must outlive the routing.
void route_logging_through(logmux::Console* console);

// route_logging_through(&console) for its lifetime; declare it after the
// console. end() stops the routing early and waits until the console has
// written everything, for output that must come after the workers' lines.
class LoggingThroughConsole {
 public:
  explicit LoggingThroughConsole(logmux::Console& console) : console_(&console) {
    route_logging_through(console_);
  }
  ~LoggingThroughConsole() { end(); }
  LoggingThroughConsole(const LoggingThroughConsole&) = delete;
  LoggingThroughConsole& operator=(const LoggingThroughConsole&) = delete;
  void end() {
    if (console_ == nullptr) return;
    route_logging_through(nullptr);
    console_->drain();
    console_ = nullptr;
  }

 private:
  logmux::Console* console_;
};

}  // namespace gangrun::logging
