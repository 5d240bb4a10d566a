#include "util/pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace gangrun {

Expected<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) {
    return fail(ErrorCode::internal, "pipe2 failed: " + errno_text(errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Expected<void> set_non_blocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return fail(ErrorCode::internal, "fcntl(O_NONBLOCK) failed: " + errno_text(errno));
  }
  return {};
}

}  // namespace gangrun
