// gangrun's stdout and stderr as seen by the output multiplexer.
//
// The blocking writes belong to a writer thread of the console's own, fed by
// a queue, so a console nobody reads (a pager that waits, a `| sleep`) never
// stalls the event loop: failures, signals, timers and the store go on at
// their usual pace. The queue is bounded by cooperation, not by blocking: a
// stream that finds the console congested() stops reading its pipe and asks
// when_drained() to be resumed; its worker then blocks on the full pipe, the
// same back-pressure a slow terminal applies. Nothing is dropped and the
// order of lines is the order of flush() calls.
//
// Threads: every member, the destructor included, is for the event-loop
// thread (the thread that created the console). The writer thread blocks all
// signals, so they keep reaching the loop, and only writes, counts and
// posts: it never spawns or signals anything. gangrun is multi-threaded
// from here on, so a child forked without exec may run only
// async-signal-safe code (the writer may hold the queue's lock).
#pragma once

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace gangrun::logmux {

// Bytes handed to the console's writer and not written yet: congested() from
// high_water on; paused streams resume once at most low_water are left.
struct ConsoleLimits {
  std::size_t high_water = 1024 * 1024;
  std::size_t low_water = 256 * 1024;
};

class Console {
 public:
  // Writes go to these descriptors (normally 1 and 2; tests pass pipes),
  // left in whatever blocking mode they are: the shell shares their open
  // file description, so O_NONBLOCK is never set on them.
  Console(int out_fd = 1, int err_fd = 2, ConsoleLimits limits = ConsoleLimits{});
  // Writes everything still queued (blocking as long as the reader does),
  // then stops the writer thread. Callbacks of when_drained() not run yet are
  // dropped without running.
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Appends one whole line (terminator included) behind prefix to the
  // buffer of stdout (to_err false) or stderr. Nothing is handed to the
  // writer until flush(), so a line goes out whole and lines of two workers
  // never interleave.
  void append_line(bool to_err, std::string_view prefix, std::string_view line);
  // Hands everything buffered to the writer thread. Never blocks on the
  // descriptors, and accepts the bytes even when congested (the caller
  // checks congested() before reading more). EPIPE (nobody reads that
  // stream any more) silences it for good instead of killing gangrun.
  void flush();

  // Queues text (gangrun's own message, terminator included) for stderr
  // behind everything flushed so far, and flushes. For a logging sink: when
  // stderr is the stalled reader, a message must not block the loop either.
  void append_message(std::string_view text);

  // True while at least high_water bytes wait for the writer: a stream
  // should stop reading its pipe until when_drained() resumes it.
  bool congested() const;
  // Posts resume to io once at most low_water bytes wait (at once if that is
  // already so). Runs at most once, on io's thread; dropped if the console
  // goes away first. io must outlive the console or run no longer than it.
  void when_drained(boost::asio::io_context& io, std::function<void()> resume);

  // Blocks until everything flushed so far was written (or failed). For the
  // end of a run, when nothing else has to happen meanwhile.
  void drain();

 private:
  struct Chunk {
    bool to_err;
    std::string bytes;
  };
  struct Waiter {
    boost::asio::io_context* io;
    std::function<void()> resume;
  };

  // False when no thread could be started; flush() then writes inline.
  bool start_writer();
  void write_chunk(const Chunk& chunk);
  void writer_loop();
  // Caller holds mutex_.
  void wake_waiters_if_drained();

  int out_fd_;
  int err_fd_;
  ConsoleLimits limits_;
  std::string out_buffer_;  // event-loop thread only
  std::string err_buffer_;
  // Set by the writer on EPIPE, read by append_line to stop buffering.
  std::atomic<bool> out_broken_{false};
  std::atomic<bool> err_broken_{false};

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;  // writer waits: a chunk or stopping_
  std::condition_variable drained_;     // drain() waits: pending_bytes_ == 0
  std::deque<Chunk> queue_;
  // Queued plus being written: a chunk counts until its write returned.
  std::size_t pending_bytes_ = 0;
  std::vector<Waiter> waiters_;
  bool stopping_ = false;
  std::thread writer_;  // started by the first flush() that has bytes to write
};

}  // namespace gangrun::logmux
