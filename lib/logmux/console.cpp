#include "logmux/console.hpp"

#include "logmux/write_all.hpp"

#include <cerrno>

namespace gangrun::logmux {

Console::Console(int out_fd, int err_fd) : out_{out_fd, {}, false}, err_{err_fd, {}, false} {}

void Console::append_line(bool to_err, std::string_view prefix, std::string_view line) {
  Stream& stream = to_err ? err_ : out_;
  if (stream.broken) return;
  stream.buffer.append(prefix);
  stream.buffer.append(line);
}

void Console::flush() {
  flush_stream(out_);
  flush_stream(err_);
}

void Console::flush_stream(Stream& stream) {
  if (stream.buffer.empty()) return;
  int error = write_all(stream.fd, stream.buffer);
  // EPIPE never heals: the reader is gone. Other errors (ENOSPC on a
  // redirected file, EIO on a hung-up terminal) lose this batch, and the next
  // flush tries again; gangrun has no better place to report them.
  if (error == EPIPE) stream.broken = true;
  stream.buffer.clear();
}

}  // namespace gangrun::logmux
