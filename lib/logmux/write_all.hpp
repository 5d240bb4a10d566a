// Writing a whole buffer to a descriptor that may be a pipe, a terminal or a
// file, blocking or not.
#pragma once

#include <string_view>

namespace gangrun::logmux {

// Writes every byte of bytes to fd, retrying after EINTR and short writes,
// and waiting in poll() when a non-blocking fd answers EAGAIN. Returns 0, or
// the errno that stopped it (bytes after that point were not written).
int write_all(int fd, std::string_view bytes);

}  // namespace gangrun::logmux
