// gangrun's stdout and stderr as seen by the output multiplexer. Single
// threaded: only the event-loop thread may call it.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::logmux {

class Console {
 public:
  // Writes go to these descriptors (normally 1 and 2; tests pass pipes).
  Console(int out_fd = 1, int err_fd = 2);

  // Appends one whole line (terminator included) behind prefix to the
  // buffer of stdout (to_err false) or stderr. Nothing reaches the
  // descriptor until flush(), so a line is written whole by one write call
  // sequence and lines of two workers never interleave.
  void append_line(bool to_err, std::string_view prefix, std::string_view line);
  // Writes everything buffered. Blocks until written (back-pressure reaches
  // the workers through their pipes). EPIPE (nobody reads our stdout any
  // more) silences that stream for good instead of killing gangrun.
  void flush();

 private:
  struct Stream {
    int fd;
    std::string buffer;
    bool broken = false;
  };
  void flush_stream(Stream& stream);
  Stream out_;
  Stream err_;
};

}  // namespace gangrun::logmux
