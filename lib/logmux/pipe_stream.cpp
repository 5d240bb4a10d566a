#include "logmux/pipe_stream.hpp"

#include "logmux/prefix.hpp"
#include "util/pipe.hpp"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace gangrun::logmux {

namespace {

constexpr std::size_t k_read_size = 64 * 1024;
// A turn reads at most this many chunks before letting other streams and
// timers run, so one flooding worker cannot starve the rest of the loop.
constexpr int k_reads_per_turn = 4;
// close_now() drains at most this many chunks: the writer may be a process
// gangrun failed to stop, still printing.
constexpr int k_close_drain_reads = 16;

bool has_terminator(std::string_view line) { return line.ends_with('\n') || line.ends_with('\r'); }

}  // namespace

PipeStream::PipeStream(boost::asio::io_context& io, Console& console, StreamRoute route,
                       TailBuffer* tail, LogFile file, std::chrono::milliseconds quiet)
    : io_(io),
      console_(console),
      route_(std::move(route)),
      tail_(tail),
      file_(std::move(file)),
      quiet_(quiet),
      pipe_(io),
      quiet_timer_(io),
      buffer_(std::make_unique_for_overwrite<char[]>(k_read_size)) {}

Expected<void> PipeStream::start(UniqueFd read_end) {
  if (auto made = set_non_blocking(read_end.get()); !made) {
    return fail(ErrorCode::internal,
                "cannot make a worker pipe non-blocking: " + made.error().message());
  }
  boost::system::error_code error;
  pipe_.assign(read_end.get(), error);
  if (error) {
    return fail(ErrorCode::internal, "cannot watch a worker pipe: " + error.message());
  }
  read_end.release();
  boost::asio::post(io_, [self = shared_from_this()] {
    if (!self->finished_) self->read_turn();
  });
  return {};
}

// Why async_wait and read(2) instead of async_read_some: bytes are only ever
// taken out of the pipe inside our own handler and consumed at once, so
// close_now() can drain the pipe synchronously without a completed read
// sitting in the queue with data we could neither drop nor order. Asio's
// epoll reactor is edge-triggered and does not retry a wait speculatively, so
// the rule is: wait only after read(2) said EAGAIN; every other exit from a
// turn posts the next turn instead.
void PipeStream::read_turn() {
  bool got_bytes = false;
  for (int i = 0; i < k_reads_per_turn; ++i) {
    if (route_.to_console && console_.congested()) {
      pause();
      return;
    }
    ssize_t got = ::read(pipe_.native_handle(), buffer_.get(), k_read_size);
    if (got > 0) {
      consume({buffer_.get(), static_cast<std::size_t>(got)});
      got_bytes = true;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The quiet time counts from the last byte, not from a wake-up that
      // brought none.
      if (got_bytes) arm_quiet_timer();
      wait_readable();
      return;
    }
    finish_and_post_closed();  // EOF, or a read error that will not go away
    return;
  }
  disarm_quiet_timer();
  boost::asio::post(io_, [self = shared_from_this()] {
    if (!self->finished_) self->read_turn();
  });
}

// Bytes left in the pipe stay there; once it is full the worker blocks in
// write(2), as it would on a slow terminal. The quiet timer is off meanwhile:
// a fragment may well have its end waiting unread in the pipe.
void PipeStream::pause() {
  disarm_quiet_timer();
  paused_work_.emplace(io_.get_executor());
  console_.when_drained(io_, [self = shared_from_this()] {
    self->paused_work_.reset();
    if (!self->finished_) self->read_turn();
  });
}

void PipeStream::wait_readable() {
  pipe_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [self = shared_from_this()](const boost::system::error_code& error) {
                     if (self->finished_) return;  // closed under us; nothing to do
                     if (error) {
                       self->finish_and_post_closed();
                       return;
                     }
                     self->read_turn();
                   });
}

void PipeStream::consume(std::string_view chunk) {
  file_.write(chunk);
  if (!route_.to_console && tail_ == nullptr) return;  // file only: no need for lines
  // Inside feed() a line without a terminator is always a cut piece.
  splitter_.feed(chunk, [this](std::string_view line) { route_line(line, !has_terminator(line)); });
  // One flush per chunk: the console sees whole lines in few large writes.
  console_.flush();
}

void PipeStream::route_line(std::string_view line, bool cut) {
  if (tail_ != nullptr) tail_->push(line, progress_.is_progress(line));
  if (!route_.to_console) return;
  // The piece after a cut always gets the prefix, whatever it begins with:
  // a reader rejoins the pieces by stripping it (k_cut_marker).
  std::string_view prefix =
      after_cut_ ? std::string_view(route_.prefix) : prefix_for_line(route_.prefix, line);
  after_cut_ = cut;
  if (has_terminator(line)) {
    console_.append_line(route_.console_is_err, prefix, line);
  } else {
    // A fragment or a piece of an overlong line still ends its console line,
    // so the next prefix starts at the left margin.
    std::string ended(line);
    if (cut) ended.append(k_cut_marker);
    ended.push_back('\n');
    console_.append_line(route_.console_is_err, prefix, ended);
  }
}

void PipeStream::arm_quiet_timer() {
  ++quiet_generation_;
  if (!splitter_.has_fragment() || quiet_.count() < 0) return;
  quiet_timer_.expires_after(quiet_);
  quiet_timer_.async_wait([self = shared_from_this(),
                           generation = quiet_generation_](const boost::system::error_code& error) {
    if (error || self->finished_ || generation != self->quiet_generation_) return;
    self->flush_fragment();
  });
}

void PipeStream::disarm_quiet_timer() {
  ++quiet_generation_;
  quiet_timer_.cancel();
}

void PipeStream::flush_fragment() {
  if (!splitter_.has_fragment()) return;
  route_line(splitter_.take_fragment(), false);
  console_.flush();
}

void PipeStream::finish() {
  flush_fragment();
  console_.flush();
  file_.close();
  disarm_quiet_timer();
  boost::system::error_code ignored;
  pipe_.close(ignored);
  paused_work_.reset();
  finished_ = true;
}

void PipeStream::finish_and_post_closed() {
  finish();
  boost::asio::post(io_, [self = shared_from_this()] { self->deliver_closed(); });
}

void PipeStream::close_now() {
  if (finished_) return;
  for (int i = 0; i < k_close_drain_reads; ++i) {
    ssize_t got = ::read(pipe_.native_handle(), buffer_.get(), k_read_size);
    if (got > 0) {
      consume({buffer_.get(), static_cast<std::size_t>(got)});
    } else if (!(got < 0 && errno == EINTR)) {
      break;
    }
  }
  finish();
}

void PipeStream::abandon() {
  abandoned_ = true;
  if (finished_) return;
  finished_ = true;
  disarm_quiet_timer();
  boost::system::error_code ignored;
  pipe_.close(ignored);
  paused_work_.reset();
  file_.close();
}

void PipeStream::deliver_closed() {
  if (abandoned_ || delivered_) return;
  delivered_ = true;
  if (on_closed_) on_closed_();
}

}  // namespace gangrun::logmux
