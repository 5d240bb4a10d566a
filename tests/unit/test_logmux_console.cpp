#include "logmux/console.hpp"
#include "util/fd.hpp"
#include "util/pipe.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

using gangrun::logmux::Console;

using gangrun::Pipe;

namespace {

gangrun::Pipe test_pipe() {
  auto pipe = gangrun::make_pipe();
  REQUIRE(pipe);
  return std::move(*pipe);
}

// A pipe that holds one page, so a test fills it with little output.
gangrun::Pipe small_pipe() {
  gangrun::Pipe pipe = test_pipe();
  REQUIRE(::fcntl(pipe.write_end.get(), F_SETPIPE_SZ, 4096) >= 0);
  return pipe;
}

// Reads fd until EOF.
std::string read_to_end(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(got));
  }
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
  console.drain();
  CHECK(read_available(out.read_end.get()) == "[rank0]: hello\nbare\r");
  CHECK(read_available(err.read_end.get()) == "[rank1]: oops\n");
  console.flush();
  console.drain();
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
  console.drain();  // the writer has met EPIPE now
  console.append_line(false, "", "lost too\n");
  console.append_line(true, "", "kept too\n");
  console.flush();
  console.drain();
  CHECK(read_available(err.read_end.get()) == "kept\nkept too\n");
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
  console.drain();
  out.write_end.reset();
  reader.join();
  CHECK(received.size() == expected.size());
  CHECK(received == expected);
}

TEST_CASE("logmux::Console flush never waits for a reader that stopped", "[logmux]") {
  Pipe out = small_pipe();
  Pipe err = test_pipe();
  std::string expected;
  std::string received;
  std::thread reader;
  {
    Console console(out.write_end.get(), err.write_end.get(), {64 * 1024, 16 * 1024});
    // Nobody reads yet: the pipe takes 4 KiB, the rest waits in the queue
    // while every flush() returns at once, congested or not.
    for (int i = 0; i < 20000; ++i) {
      std::string line = "line " + std::to_string(i) + "\n";
      console.append_line(false, "[r]: ", line);
      expected += "[r]: " + line;
      if (i % 100 == 0) console.flush();
    }
    console.flush();
    CHECK(console.congested());
    // The reader comes back; the destructor writes everything queued.
    reader = std::thread([&] { received = read_to_end(out.read_end.get()); });
  }
  out.write_end.reset();  // EOF for the reader
  reader.join();
  CHECK(received.size() == expected.size());
  CHECK(received == expected);
}

TEST_CASE("logmux::Console resumes waiters only once its writer caught up", "[logmux]") {
  Pipe out = small_pipe();
  Pipe err = test_pipe();
  boost::asio::io_context io;  // outlives the console, as when_drained() asks
  Console console(out.write_end.get(), err.write_end.get(), {64 * 1024, 16 * 1024});

  std::string expected;
  for (int i = 0; i < 20000; ++i) {
    std::string line = std::to_string(i) + " some text to fill the queue\n";
    console.append_line(false, "", line);
    expected += line;
  }
  console.flush();
  REQUIRE(console.congested());
  int resumed = 0;
  console.when_drained(io, [&] { ++resumed; });
  // The writer is stuck on a full pipe with far more than the low-water
  // mark still queued: nothing can have been posted.
  CHECK(io.poll() == 0);
  CHECK(resumed == 0);

  std::string received;
  std::thread reader([&] { received = read_to_end(out.read_end.get()); });
  // A resume to come is not work io knows of; the stream that waits for it
  // holds a guard like this one.
  auto work = boost::asio::make_work_guard(io);
  io.restart();  // poll() found no work and stopped io
  CHECK(io.run_one_for(std::chrono::seconds(20)) == 1);
  work.reset();
  CHECK(resumed == 1);
  CHECK_FALSE(console.congested());

  // Not congested: posted at once, still never run inside the call.
  console.when_drained(io, [&] { ++resumed; });
  CHECK(resumed == 1);
  io.restart();
  CHECK(io.poll() == 1);
  CHECK(resumed == 2);

  console.drain();
  out.write_end.reset();
  reader.join();
  CHECK(received == expected);
}

TEST_CASE("logmux::Console keeps the order of lines across its two streams", "[logmux]") {
  // Both streams into one pipe, as with `gangrun ... 2>&1 | less`: one writer
  // thread writes the chunks in the order they were flushed.
  Pipe both = test_pipe();
  std::string expected;
  std::string received;
  std::thread reader([&] { received = read_to_end(both.read_end.get()); });
  {
    Console console(both.write_end.get(), both.write_end.get(), {4096, 1024});
    for (int i = 0; i < 5000; ++i) {
      std::string line = std::to_string(i) + "\n";
      console.append_line(i % 3 == 0, "", line);
      expected += line;
      console.flush();
    }
  }
  both.write_end.reset();
  reader.join();
  CHECK(received == expected);
}

TEST_CASE("logmux::Console queues gangrun's own messages in order with the lines", "[logmux]") {
  Pipe out = test_pipe();
  Pipe err = test_pipe();
  Console console(out.write_end.get(), err.write_end.get());
  console.append_line(true, "[rank0]: ", "before\n");
  console.flush();
  console.append_message("gangrun: warning: something\n");
  console.append_line(true, "[rank0]: ", "after\n");
  console.flush();
  console.drain();
  CHECK(read_available(err.read_end.get()) ==
        "[rank0]: before\ngangrun: warning: something\n[rank0]: after\n");
}
