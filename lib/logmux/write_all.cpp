#include "logmux/write_all.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace gangrun::logmux {

namespace {

// gangrun's stdout may be a pipe another program made non-blocking (the
// flag lives in the shared open file, not in our descriptor), so EAGAIN must
// turn into waiting rather than losing output.
int wait_writable(int fd) {
  pollfd entry{fd, POLLOUT, 0};
  while (::poll(&entry, 1, -1) < 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

}  // namespace

int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(written));
      continue;
    }
    // write(2) returns 0 only for a zero count; treat it as an error instead
    // of spinning.
    if (written == 0) return EIO;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (int error = wait_writable(fd); error != 0) return error;
      continue;
    }
    return errno;
  }
  return 0;
}

}  // namespace gangrun::logmux
