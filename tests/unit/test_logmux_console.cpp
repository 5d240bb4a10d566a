#include "logmux/console.hpp"
#include "util/fd.hpp"
#include "util/pipe.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>

using gangrun::UniqueFd;
using gangrun::logmux::Console;

using gangrun::Pipe;

namespace {

gangrun::Pipe test_pipe() {
  auto pipe = gangrun::make_pipe();
  REQUIRE(pipe);
  return std::move(*pipe);
}

// Whatever the pipe holds now, without waiting.
std::string read_available(int fd) {
  std::string text;
  char buffer[4096];
  pollfd entry{fd, POLLIN, 0};
  while (::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN) != 0) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

}  // namespace

TEST_CASE("logmux::Console writes buffered lines only on flush", "[logmux]") {
  Pipe out = test_pipe();
  Pipe err = test_pipe();
  Console console(out.write_end.get(), err.write_end.get());
  console.append_line(false, "[rank0]: ", "hello\n");
  console.append_line(true, "[rank1]: ", "oops\n");
  console.append_line(false, "", "bare\r");
  CHECK(read_available(out.read_end.get()).empty());
  console.flush();
  CHECK(read_available(out.read_end.get()) == "[rank0]: hello\nbare\r");
  CHECK(read_available(err.read_end.get()) == "[rank1]: oops\n");
  console.flush();
  CHECK(read_available(out.read_end.get()).empty());
}

TEST_CASE("logmux::Console goes silent on a stream nobody reads", "[logmux]") {
  // gangrun ignores SIGPIPE; so must this test, or EPIPE never arrives.
  std::signal(SIGPIPE, SIG_IGN);
  Pipe out = test_pipe();
  Pipe err = test_pipe();
  Console console(out.write_end.get(), err.write_end.get());
  out.read_end.reset();
  console.append_line(false, "", "lost\n");
  console.append_line(true, "", "kept\n");
  console.flush();
  console.append_line(false, "", "lost too\n");
  console.flush();
  CHECK(read_available(err.read_end.get()) == "kept\n");
}

TEST_CASE("logmux::Console waits out a full non-blocking pipe", "[logmux]") {
  Pipe out = test_pipe();
  Pipe err = test_pipe();
  int flags = ::fcntl(out.write_end.get(), F_GETFL);
  REQUIRE(::fcntl(out.write_end.get(), F_SETFL, flags | O_NONBLOCK) == 0);

  std::string expected;
  Console console(out.write_end.get(), err.write_end.get());
  for (int i = 0; i < 100000; ++i) {
    std::string line = "line " + std::to_string(i) + " of a few bytes\n";
    console.append_line(false, "[r]: ", line);
    expected += "[r]: " + line;
  }
  // Far more than a pipe holds (64 KiB), read slowly from another thread.
  std::string received;
  std::thread reader([&] {
    char buffer[1000];
    while (true) {
      ssize_t got = ::read(out.read_end.get(), buffer, sizeof buffer);
      if (got <= 0) break;
      received.append(buffer, static_cast<std::size_t>(got));
    }
  });
  console.flush();
  out.write_end.reset();
  reader.join();
  CHECK(received.size() == expected.size());
  CHECK(received == expected);
}
