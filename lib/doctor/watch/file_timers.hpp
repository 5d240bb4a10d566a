// The server side of torch.distributed.elastic.timer's file-based timers,
// so that a script written for torchrun's watchdog works unchanged under
// gangrun. When TORCHELASTIC_ENABLE_FILE_TIMER=1, torchrun's agent makes a
// named pipe (TORCHELASTIC_TIMER_FILE, else a new name it gives the
// workers) and each worker's FileTimerClient writes one JSON line per
// request to it:
//
//   {"version": 1, "pid": 4711, "scope_id": "step", "expiration_time": 1764146400.5,
//    "signal": 9}
//
// expiration_time is wall-clock seconds; a negative one releases the
// worker's timer of that scope. When a timer expires, the worker is killed
// with its signal (none when 0 or less). gangrun reads the pipe on the
// agent's loop; every request is also the rank's sign of life for the hang
// watch, and an expired timer is named with every rank's stack before the
// signal goes out (doctor/watch/file_timer_watch.hpp).
#pragma once

#include "util/error.hpp"
#include "util/fd.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gangrun::doctor {

class FileTimers {
 public:
  struct Expired {
    pid_t pid = -1;
    std::string scope_id;
    int signal = 0;     // what the client asked to be killed with; <= 0: not killed
    double late_s = 0;  // how long ago it expired when it was seen
  };
  using ExpiredHandler = std::function<void(const Expired& expired)>;

  // Makes the named pipe at path (it must not exist) and reads it on io.
  static Expected<std::unique_ptr<FileTimers>> open(boost::asio::io_context& io,
                                                    const std::string& path,
                                                    ExpiredHandler on_expired);
  ~FileTimers();  // removes the pipe
  FileTimers(const FileTimers&) = delete;
  FileTimers& operator=(const FileTimers&) = delete;

  const std::string& path() const { return path_; }
  // When the worker running as pid last sent a request; nullopt: never.
  std::optional<std::chrono::steady_clock::time_point> last_request_from(pid_t pid) const;
  // Forgets every timer (a new round's workers are new processes).
  void clear();

  // The longest request line kept; a longer one is dropped with a warning.
  static constexpr std::size_t k_max_line_bytes = 64 * 1024;
  // Bytes of a line not yet complete, at most k_max_line_bytes.
  std::size_t buffered_bytes() const { return pending_.size(); }
  // Lines dropped for their length, and requests ignored for a signal that
  // is none (outside 0..SIGRTMAX), since the pipe was opened.
  std::size_t dropped_lines() const { return dropped_lines_; }
  std::size_t refused_requests() const { return refused_requests_; }

 private:
  FileTimers(boost::asio::io_context& io, std::string path, UniqueFd reader, UniqueFd writer,
             ExpiredHandler on_expired);
  void read_more();
  void take_bytes(std::string_view bytes);
  void take_line(const std::string& line);
  void warn_once_in_a_while(const std::string& what);
  void check_expiry();

  std::string path_;
  boost::asio::posix::stream_descriptor reader_;
  UniqueFd keep_open_;  // a writer of our own, so the pipe never reads EOF between clients
  boost::asio::steady_timer expiry_;
  ExpiredHandler on_expired_;
  std::string pending_;         // bytes of a line not yet complete
  bool dropping_line_ = false;  // the line being read is too long: skip to its end
  std::size_t dropped_lines_ = 0;
  std::size_t refused_requests_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_warning_;
  std::array<char, 4096> buffer_{};
  std::map<std::pair<pid_t, std::string>, std::pair<double, int>> timers_;  // expiration, signal
  std::map<pid_t, std::chrono::steady_clock::time_point> last_request_;
};

}  // namespace gangrun::doctor
