#include "logmux/console.hpp"

#include "logmux/write_all.hpp"

#include <boost/asio/post.hpp>

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX pthread_sigmask

#include <cerrno>
#include <system_error>

namespace gangrun::logmux {

namespace {

// Starts fn on a thread that has every signal blocked, so signals keep going
// to the event-loop thread and a blocked write is never cut short by a
// handler meant for the loop.
std::thread start_without_signals(std::function<void()> fn) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::thread thread;
  try {
    thread = std::thread(std::move(fn));
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // the loop needs its signals back
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace

Console::Console(int out_fd, int err_fd, ConsoleLimits limits)
    : out_fd_(out_fd), err_fd_(err_fd), limits_(limits) {}

Console::~Console() {
  flush();
  {
    std::lock_guard lock(mutex_);
    waiters_.clear();  // their io_context may be gone already
    stopping_ = true;
  }
  work_ready_.notify_one();
  // The writer empties the queue before it looks at stopping_.
  if (writer_.joinable()) writer_.join();
}

void Console::append_line(bool to_err, std::string_view prefix, std::string_view line) {
  if ((to_err ? err_broken_ : out_broken_).load(std::memory_order_relaxed)) return;
  std::string& buffer = to_err ? err_buffer_ : out_buffer_;
  buffer.append(prefix);
  buffer.append(line);
}

void Console::flush() {
  if (out_buffer_.empty() && err_buffer_.empty()) return;
  // Started with the first bytes: a job whose workers print nothing (or
  // write to the terminal themselves) pays for no thread.
  if (!writer_.joinable() && !start_writer()) {
    // No thread to be had (the process or pids limit is spent, often by the
    // workers themselves): write here, blocking the loop on a slow reader,
    // rather than lose the output or fail the run. The next flush tries again.
    for (bool to_err : {false, true}) {
      std::string& buffer = to_err ? err_buffer_ : out_buffer_;
      if (buffer.empty()) continue;
      write_chunk(Chunk{to_err, std::move(buffer)});
      buffer.clear();  // a moved-from string is valid but unspecified
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    for (bool to_err : {false, true}) {
      std::string& buffer = to_err ? err_buffer_ : out_buffer_;
      if (buffer.empty()) continue;
      pending_bytes_ += buffer.size();
      queue_.push_back(Chunk{to_err, std::move(buffer)});
      buffer.clear();  // a moved-from string is valid but unspecified
    }
  }
  work_ready_.notify_one();
}

bool Console::start_writer() {
  try {
    writer_ = start_without_signals([this] { writer_loop(); });
    return true;
  } catch (const std::system_error&) {
    return false;
  }
}

void Console::append_message(std::string_view text) {
  if (err_broken_.load(std::memory_order_relaxed)) return;
  err_buffer_.append(text);
  flush();
}

bool Console::congested() const {
  std::lock_guard lock(mutex_);
  return pending_bytes_ >= limits_.high_water;
}

void Console::when_drained(boost::asio::io_context& io, std::function<void()> resume) {
  std::lock_guard lock(mutex_);
  if (pending_bytes_ <= limits_.low_water) {
    boost::asio::post(io, std::move(resume));
    return;
  }
  waiters_.push_back(Waiter{&io, std::move(resume)});
}

void Console::drain() {
  flush();
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return pending_bytes_ == 0; });
}

void Console::wake_waiters_if_drained() {
  if (pending_bytes_ > limits_.low_water || waiters_.empty()) return;
  // post() is safe from any thread; the resumed streams run on their loop.
  for (Waiter& waiter : waiters_) boost::asio::post(*waiter.io, std::move(waiter.resume));
  waiters_.clear();
}

void Console::write_chunk(const Chunk& chunk) {
  std::atomic<bool>& broken = chunk.to_err ? err_broken_ : out_broken_;
  if (broken.load(std::memory_order_relaxed)) return;
  int error = write_all(chunk.to_err ? err_fd_ : out_fd_, chunk.bytes);
  // EPIPE never heals: the reader is gone. Other errors (ENOSPC on a
  // redirected file, EIO on a hung-up terminal) lose this chunk, and the
  // next one tries again; gangrun has no better place to report them.
  if (error == EPIPE) broken.store(true, std::memory_order_relaxed);
}

void Console::writer_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything was written
    Chunk chunk = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    write_chunk(chunk);
    lock.lock();
    pending_bytes_ -= chunk.bytes.size();
    wake_waiters_if_drained();
    if (pending_bytes_ == 0) drained_.notify_all();
  }
}

}  // namespace gangrun::logmux
