#include "commands/top_of_one_node.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>

namespace gangrun::commands {

namespace {

using Clock = std::chrono::steady_clock;

// The agent looks for the wanted file once a second.
constexpr std::chrono::milliseconds k_first_snapshot_limit{2500};
constexpr std::chrono::milliseconds k_poll{50};

bool later(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

timespec wall_now() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return now;
}

}  // namespace

Expected<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes,
                                        timespec& written) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return fail(ErrorCode::io, "cannot read " + path + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return fail(ErrorCode::io, path + " is not a regular file");
  }
  written = info.st_mtim;
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (text.size() > max_bytes) break;
  }
  ::close(fd);
  if (text.size() > max_bytes) {
    return fail(ErrorCode::store, fmt::format("{} is over {} bytes", path, max_bytes));
  }
  return text;
}

Expected<TopReading> OneNodeStatusReader::read(std::chrono::milliseconds limit) {
  GANGRUN_TRY(doctor::want_status(files_.wanted));
  if (!first_wanted_) {
    first_wanted_ = wall_now();
    limit = std::max(limit, k_first_snapshot_limit);
  }
  const Clock::time_point give_up = Clock::now() + limit;
  std::optional<std::string> fresh;  // written since top began, maybe read before
  timespec fresh_written{};
  for (;;) {
    timespec written{};
    auto text = read_bounded_file(files_.status, k_max_status_bytes, written);
    if (text && !later(*first_wanted_, written)) {
      if (!last_read_ || later(written, *last_read_)) {
        fresh = std::move(*text);
        fresh_written = written;
        break;  // a new one
      }
      fresh = std::move(*text);
      fresh_written = written;
    } else if (!text && text.error().code() != ErrorCode::io) {
      return tl::unexpected(text.error());
    }
    if (Clock::now() >= give_up) break;
    std::this_thread::sleep_for(k_poll);
  }
  if (!fresh) {
    return fail(ErrorCode::io, fmt::format("the job's agent (pid {}) has not written its "
                                           "snapshot to {} yet",
                                           job_.pid, files_.status));
  }
  last_read_ = fresh_written;
  GANGRUN_TRY_ASSIGN(status, status_from_answer(*fresh));
  TopView view{.run_id = job_.run_id, .nodes = {}, .unanswered = {}};
  view.nodes.push_back(std::move(*status));
  return TopReading{.view = std::move(view), .ended = std::nullopt};
}

}  // namespace gangrun::commands
