// Reads every worker pipe on the event loop and routes whole lines to the
// console (behind the worker's prefix), to log files, and to tail buffers.
// Only the event-loop thread may call it. While the console is congested
// (its reader is slow or stopped) the streams that feed it stop reading
// their pipes, so the workers block instead of the loop; they resume once
// the console caught up. Lines reach the console in the order they were
// read.
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
#include <string_view>
#include <vector>

namespace gangrun::logmux {

// Ends each console piece of a line cut at the 64 KiB line limit (the last
// piece has the line's own terminator instead): strip it, and the next
// line's prefix, to rejoin the line. Log files are never cut.
inline constexpr std::string_view k_cut_marker = " [gangrun: line continues]";

// Where one worker stream (its stdout or its stderr) goes.
struct StreamRoute {
  bool to_console = true;  // false when redirected only, or filtered out by --local_ranks_filter
  bool console_is_err = false;  // write to gangrun's stderr instead of stdout
  // Put before every console line (file lines get none), but a line that
  // already begins with it (torch's "[rank1]:") is shown as it is
  // (prefix.hpp: prefix_for_line).
  std::string prefix;
  std::optional<std::string> file_path;  // log file, created/truncated by add_stream
};

class OutputMux {
 public:
  // io and console must outlive the mux. A paused stream leaves a resume
  // with the console that is posted to io later, so io must outlive the
  // console too, or the console must be drained (Console::drain()) before io
  // goes.
  OutputMux(boost::asio::io_context& io, Console& console);
  // Closes streams still open without writing anything more (their console
  // and tails may already be gone) and without calling back; call
  // close_all() first to keep their output.
  ~OutputMux();
  OutputMux(const OutputMux&) = delete;
  OutputMux& operator=(const OutputMux&) = delete;

  // Starts reading read_end (the parent's end of a worker pipe; made
  // non-blocking and owned from now on). tail, if not null, must outlive the
  // stream and receives every line, each marked as progress or not
  // (LineProgress: a redraw of a bar that did not advance is not). An
  // unterminated fragment is flushed to the console (with a '\n' added) at
  // EOF or after quiet_ms without new bytes (never before EOF if quiet_ms is
  // negative); the rest of that line later comes as a new line. The log file
  // gets the bytes exactly as read. on_closed runs on the loop (posted, never
  // from inside add_stream) once EOF was reached and everything was written.
  // Fails if the log file cannot be opened (its parent directories are
  // created) or the descriptor cannot be watched.
  Expected<void> add_stream(UniqueFd read_end, StreamRoute route, TailBuffer* tail,
                            std::function<void()> on_closed, int quiet_ms = 200);

  // Number of streams not yet at EOF.
  std::size_t open_streams() const;

  // Stops reading every open stream now, flushing what was read (used when
  // a pipe is still held open by a process gangrun could not end, or the
  // console stayed congested past the drain time): takes what the pipe
  // already holds without waiting (at most 1 MiB per stream), even from a
  // paused stream, hands it and the fragments to the console (which accepts
  // them however congested it is, and writes them before it is destroyed),
  // closes, and runs every on_closed not run yet before returning. It never
  // waits for the console's reader.
  void close_all();

  // Paths of the log files that lost bytes to a write error (each reported
  // once, as a warning, when it happened), each once. Ask before the mux
  // is destroyed.
  std::vector<std::string> incomplete_logs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gangrun::logmux
