// One worker stream (its stdout or its stderr) being read on the event loop.
// Private to output_mux.cpp, which owns every PipeStream through a
// shared_ptr; pending handlers hold one too, so a stream outlives its mux
// until the loop has dropped them.
#pragma once

#include "logmux/console.hpp"
#include "logmux/line_progress.hpp"
#include "logmux/line_splitter.hpp"
#include "logmux/log_file.hpp"
#include "logmux/output_mux.hpp"
#include "logmux/tail_buffer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace gangrun::logmux {

class PipeStream : public std::enable_shared_from_this<PipeStream> {
 public:
  // A negative quiet never flushes a fragment before EOF.
  PipeStream(boost::asio::io_context& io, Console& console, StreamRoute route, TailBuffer* tail,
             LogFile file, std::chrono::milliseconds quiet);

  // Run by deliver_closed(), at most once, never after abandon().
  void set_on_closed(std::function<void()> on_closed) { on_closed_ = std::move(on_closed); }

  // Takes read_end, makes it non-blocking and posts the first read.
  Expected<void> start(UniqueFd read_end);
  // Reads what the pipe holds right now (bounded, never waiting), flushes
  // everything and closes. on_closed is left to the caller's deliver_closed().
  void close_now();
  // Closes without writing anything or calling back: the owner is going away
  // and the console or the tail buffer may already be gone.
  void abandon();
  void deliver_closed();

  bool finished() const { return finished_; }
  const LogFile& log_file() const { return file_; }

 private:
  void read_turn();
  void wait_readable();
  void consume(std::string_view chunk);
  // cut: a piece of an overlong line, marked so it can be rejoined.
  void route_line(std::string_view line, bool cut);
  // Stops reading while the console is congested; the console posts the
  // next turn once its writer has caught up.
  void pause();
  void arm_quiet_timer();
  void disarm_quiet_timer();
  void flush_fragment();
  void finish();
  void finish_and_post_closed();

  boost::asio::io_context& io_;
  Console& console_;
  StreamRoute route_;
  TailBuffer* tail_;
  LogFile file_;
  std::chrono::milliseconds quiet_;
  std::function<void()> on_closed_;
  boost::asio::posix::stream_descriptor pipe_;
  boost::asio::steady_timer quiet_timer_;
  // Bumped whenever the armed quiet wait becomes stale: a timer that already
  // expired cannot be cancelled, its handler is queued with success.
  std::uint64_t quiet_generation_ = 0;
  LineSplitter splitter_;
  // Per stream: a bar's redraws are on one stream, and stdout and stderr share the tail.
  LineProgress progress_;
  std::unique_ptr<char[]> buffer_;
  // Held while paused: a resume posted by the console's writer is work the
  // loop must wait for, though nothing of it is queued in io yet.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      paused_work_;
  // The last console piece was cut from an overlong line: the next one
  // continues it.
  bool after_cut_ = false;
  bool finished_ = false;
  bool abandoned_ = false;
  bool delivered_ = false;
};

}  // namespace gangrun::logmux
