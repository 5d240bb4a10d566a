// Reads every worker pipe on the event loop and routes whole lines to the
// console (behind the worker's prefix), to log files, and to tail buffers.
// Only the event-loop thread may call it.
#pragma once

#include "logmux/console.hpp"
#include "logmux/tail_buffer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace gangrun::logmux {

// Where one worker stream (its stdout or its stderr) goes.
struct StreamRoute {
  bool to_console = true;  // false when redirected only, or filtered out by --local_ranks_filter
  bool console_is_err = false;           // write to gangrun's stderr instead of stdout
  std::string prefix;                    // put before every console line (file lines get none)
  std::optional<std::string> file_path;  // log file, created/truncated by add_stream
};

class OutputMux {
 public:
  // io and console must outlive the mux.
  OutputMux(boost::asio::io_context& io, Console& console);
  // Closes streams still open without writing anything more (their console
  // and tails may already be gone) and without calling back; call
  // close_all() first to keep their output.
  ~OutputMux();
  OutputMux(const OutputMux&) = delete;
  OutputMux& operator=(const OutputMux&) = delete;

  // Starts reading read_end (the parent's end of a worker pipe; made
  // non-blocking and owned from now on). tail, if not null, must outlive the
  // stream and receives every line. An unterminated fragment is flushed to
  // the console (with a '\n' added) at EOF or after quiet_ms without new
  // bytes (never before EOF if quiet_ms is negative); the rest of that line
  // later comes as a new line. The log file gets the bytes exactly as read.
  // on_closed runs on the loop (posted, never from inside add_stream) once
  // EOF was reached and everything was written. Fails if the log file cannot
  // be opened (its parent directories are created) or the descriptor cannot
  // be watched.
  Expected<void> add_stream(UniqueFd read_end, StreamRoute route, TailBuffer* tail,
                            std::function<void()> on_closed, int quiet_ms = 200);

  // Number of streams not yet at EOF.
  std::size_t open_streams() const;

  // Stops reading every open stream now, flushing what was read (used when
  // a pipe is still held open by a process gangrun could not end): takes
  // what the pipe already holds without waiting (at most 1 MiB per stream),
  // flushes fragments, closes, and runs every on_closed not run yet before
  // returning.
  void close_all();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::logmux
