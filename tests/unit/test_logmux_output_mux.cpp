#include "logmux/console.hpp"
#include "logmux/output_mux.hpp"
#include "logmux/tail_buffer.hpp"
#include "temp_dir.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/pipe.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using gangrun::ErrorCode;
using gangrun::UniqueFd;
using gangrun::logmux::Console;
using gangrun::logmux::k_cut_marker;
using gangrun::logmux::OutputMux;
using gangrun::logmux::StreamRoute;
using gangrun::logmux::TailBuffer;
using Lines = std::vector<std::string>;

using gangrun::Pipe;

namespace {

using gangrun::test::TempDir;

gangrun::Pipe test_pipe() {
  auto pipe = gangrun::make_pipe();
  REQUIRE(pipe);
  return std::move(*pipe);
}

UniqueFd create_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  return UniqueFd(fd);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Blocking write of all of text (the test's stand-in for a worker).
void write_text(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

StreamRoute route(std::string prefix, bool to_err = false) {
  StreamRoute r;
  r.prefix = std::move(prefix);
  r.console_is_err = to_err;
  return r;
}

// Console writing into two temp files.
struct ConsoleFiles {
  // What the console wrote so far, once its writer caught up.
  std::string out_text() {
    console.drain();
    return read_file(out_path);
  }
  std::string err_text() {
    console.drain();
    return read_file(err_path);
  }

  explicit ConsoleFiles(const TempDir& dir)
      : out_path(dir / "console.out"),
        err_path(dir / "console.err"),
        out(create_file(out_path)),
        err(create_file(err_path)),
        console(out.get(), err.get()) {}
  std::string out_path;
  std::string err_path;
  UniqueFd out;
  UniqueFd err;
  Console console;
};

// One worker stream read by a mux into a tail, behind a console writing into files.
struct OneStream {
  TempDir dir;
  ConsoleFiles screen{dir};
  boost::asio::io_context io;
  OutputMux mux{io, screen.console};
  Pipe pipe = test_pipe();
  TailBuffer tail;
};

}  // namespace

TEST_CASE("logmux::OutputMux routes lines to console, file and tail", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);

  Pipe p0 = test_pipe();
  Pipe p1 = test_pipe();
  Pipe p2 = test_pipe();
  TailBuffer tail0;
  TailBuffer tail1;
  int closed0 = 0;
  int closed1 = 0;
  int closed2 = 0;

  StreamRoute r0 = route("[rank0]: ");
  r0.file_path = dir / "0/stdout.log";  // the directory is created
  REQUIRE(mux.add_stream(std::move(p0.read_end), r0, &tail0, [&] { ++closed0; }));
  REQUIRE(
      mux.add_stream(std::move(p1.read_end), route("[rank1]: ", true), &tail1, [&] { ++closed1; }));
  StreamRoute r2 = route("[rank2]: ");
  r2.to_console = false;
  r2.file_path = dir / "2.log";
  REQUIRE(mux.add_stream(std::move(p2.read_end), r2, nullptr, [&] { ++closed2; }));
  CHECK(mux.open_streams() == 3);

  const std::string raw0 = "hello\nprogress 10%\rprogress 20%\rdone\r\nunterminated";
  write_text(p0.write_end.get(), raw0);
  write_text(p1.write_end.get(), "e1\ne2\n");
  write_text(p2.write_end.get(), "only in the file\n");
  p0.write_end.reset();
  p1.write_end.reset();
  p2.write_end.reset();
  CHECK(closed0 + closed1 + closed2 == 0);  // never called from inside add_stream

  io.run();

  CHECK(closed0 == 1);
  CHECK(closed1 == 1);
  CHECK(closed2 == 1);
  CHECK(mux.open_streams() == 0);
  CHECK(screen.out_text() ==
        "[rank0]: hello\n[rank0]: progress 10%\r[rank0]: progress 20%\r[rank0]: done\r\n"
        "[rank0]: unterminated\n");
  CHECK(screen.err_text() == "[rank1]: e1\n[rank1]: e2\n");
  CHECK(read_file(dir / "0/stdout.log") == raw0);
  CHECK(read_file(dir / "2.log") == "only in the file\n");
  CHECK(tail0.lines() == Lines{"hello", "progress 10%", "progress 20%", "done", "unterminated"});
  CHECK(tail1.lines() == Lines{"e1", "e2"});
}

TEST_CASE("logmux::OutputMux flushes a fragment when the worker goes quiet", "[logmux]") {
  OneStream s;
  int closed = 0;
  StreamRoute r = route("[p] ");
  r.file_path = s.dir / "p.log";
  REQUIRE(s.mux.add_stream(
      std::move(s.pipe.read_end), r, &s.tail, [&] { ++closed; }, 30));

  write_text(s.pipe.write_end.get(), "line\nabc");
  s.io.run_for(std::chrono::milliseconds(300));
  CHECK(s.screen.out_text() == "[p] line\n[p] abc\n");
  CHECK(s.mux.open_streams() == 1);

  write_text(s.pipe.write_end.get(), "def\n");
  s.pipe.write_end.reset();
  s.io.restart();
  s.io.run();
  CHECK(closed == 1);
  CHECK(s.screen.out_text() == "[p] line\n[p] abc\n[p] def\n");
  CHECK(read_file(s.dir / "p.log") == "line\nabcdef\n");
  CHECK(s.tail.lines() == Lines{"line", "abc", "def"});
}

TEST_CASE("logmux::OutputMux with a negative quiet time keeps a fragment until EOF", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe pipe = test_pipe();
  REQUIRE(mux.add_stream(std::move(pipe.read_end), route("[p] "), nullptr, {}, -1));

  write_text(pipe.write_end.get(), "abc");
  io.run_for(std::chrono::milliseconds(100));
  CHECK(screen.out_text().empty());
  write_text(pipe.write_end.get(), "def");
  pipe.write_end.reset();
  io.restart();
  io.run();
  CHECK(screen.out_text() == "[p] abcdef\n");
}

TEST_CASE("logmux::OutputMux keeps lines whole and in order under volume", "[logmux]") {
  constexpr int k_streams = 2;
  constexpr int k_lines = 100000;
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);

  std::vector<std::string> raw(k_streams);
  std::vector<Pipe> pipes;
  std::vector<TailBuffer> tails(k_streams);
  int closed = 0;
  for (int s = 0; s < k_streams; ++s) {
    for (int i = 0; i < k_lines; ++i) {
      raw[static_cast<std::size_t>(s)] +=
          "s" + std::to_string(s) + " line " + std::to_string(i) + " some payload to widen it\n";
    }
    pipes.push_back(test_pipe());
    StreamRoute r = route("[rank" + std::to_string(s) + "]: ");
    r.file_path = dir / ("s" + std::to_string(s) + ".log");
    REQUIRE(mux.add_stream(std::move(pipes.back().read_end), r, &tails[static_cast<std::size_t>(s)],
                           [&] { ++closed; }));
  }

  // Writers cut the text at random places, so reads end mid-line.
  std::vector<std::thread> writers;
  for (int s = 0; s < k_streams; ++s) {
    writers.emplace_back([&, s] {
      std::mt19937 random(static_cast<unsigned>(s) + 1);
      std::string_view text = raw[static_cast<std::size_t>(s)];
      int fd = pipes[static_cast<std::size_t>(s)].write_end.get();
      while (!text.empty()) {
        std::size_t size = std::min<std::size_t>(text.size(), 1 + random() % 9000);
        write_text(fd, text.substr(0, size));
        text.remove_prefix(size);
      }
      pipes[static_cast<std::size_t>(s)].write_end.reset();
    });
  }
  io.run();
  for (auto& writer : writers) writer.join();

  CHECK(closed == k_streams);
  std::vector<int> next(k_streams, 0);
  std::istringstream console(screen.out_text());
  std::string line;
  int bad = 0;
  while (std::getline(console, line)) {
    int s = line.size() > 6 ? line[5] - '0' : -1;
    if (s < 0 || s >= k_streams) {
      ++bad;
      continue;
    }
    int& i = next[static_cast<std::size_t>(s)];
    std::string expected = "[rank" + std::to_string(s) + "]: s" + std::to_string(s) + " line " +
                           std::to_string(i) + " some payload to widen it";
    if (line != expected) ++bad;
    ++i;
  }
  CHECK(bad == 0);
  CHECK(next == std::vector<int>(k_streams, k_lines));
  for (int s = 0; s < k_streams; ++s) {
    CHECK(read_file(dir / ("s" + std::to_string(s) + ".log")) == raw[static_cast<std::size_t>(s)]);
    Lines tail = tails[static_cast<std::size_t>(s)].lines();
    REQUIRE(tail.size() == 20);
    CHECK(tail.back() == "s" + std::to_string(s) + " line " + std::to_string(k_lines - 1) +
                             " some payload to widen it");
  }
}

TEST_CASE("logmux::OutputMux close_all drains, flushes and calls back at once", "[logmux]") {
  std::signal(SIGPIPE, SIG_IGN);
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe a = test_pipe();
  Pipe b = test_pipe();
  int closed_a = 0;
  int closed_b = 0;
  REQUIRE(mux.add_stream(std::move(a.read_end), route("[a] "), nullptr, [&] { ++closed_a; }));
  REQUIRE(mux.add_stream(std::move(b.read_end), route("[b] "), nullptr, [&] { ++closed_b; }));

  write_text(a.write_end.get(), "one\n");
  io.poll();  // the streams now wait on the loop
  write_text(a.write_end.get(), "two\npartial");
  write_text(b.write_end.get(), "bee\n");
  b.write_end.reset();  // b reached EOF, but the loop has not seen it yet

  mux.close_all();
  CHECK(closed_a == 1);
  CHECK(closed_b == 1);
  CHECK(mux.open_streams() == 0);
  CHECK(screen.out_text() == "[a] one\n[a] two\n[a] partial\n[b] bee\n");

  // The writers of a pipe nobody reads any more get EPIPE, and the loop
  // has nothing left to call.
  CHECK(::write(a.write_end.get(), "x\n", 2) < 0);
  io.run();
  CHECK(closed_a == 1);
  CHECK(closed_b == 1);
}

TEST_CASE("logmux::OutputMux destroyed with open streams calls nothing back", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  Pipe open_pipe = test_pipe();
  Pipe done_pipe = test_pipe();
  int closed = 0;
  {
    auto tail = std::make_unique<TailBuffer>();
    OutputMux mux(io, screen.console);
    REQUIRE(mux.add_stream(
        std::move(open_pipe.read_end), route("[o] "), tail.get(), [&] { ++closed; }, 10));
    REQUIRE(
        mux.add_stream(std::move(done_pipe.read_end), route("[d] "), nullptr, [&] { ++closed; }));
    write_text(open_pipe.write_end.get(), "frag");
    done_pipe.write_end.reset();
    // Step until the second stream has seen EOF: its callback is now posted
    // but has not run, and the first stream holds "frag" with its quiet timer
    // armed.
    while (mux.open_streams() == 2) REQUIRE(io.poll_one() == 1);
    tail.reset();  // gone before the mux, as the header allows
  }
  io.restart();
  io.run();
  CHECK(closed == 0);
  CHECK(screen.out_text().find("frag") == std::string::npos);
}

TEST_CASE("logmux::OutputMux reports a log file it cannot open", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  create_file(dir / "plain");
  Pipe pipe = test_pipe();
  StreamRoute r = route("");
  r.file_path = dir / "plain/stdout.log";  // parent is a file
  gangrun::Expected<void> added = mux.add_stream(std::move(pipe.read_end), r, nullptr, {});
  REQUIRE_FALSE(added);
  CHECK(added.error().code() == ErrorCode::io);
  CHECK(mux.open_streams() == 0);
}

TEST_CASE("logmux::OutputMux stops reading while the console is congested", "[logmux]") {
  // The console's reader stops: its pipe holds one page and nobody reads it.
  Pipe screen = test_pipe();
  REQUIRE(::fcntl(screen.write_end.get(), F_SETPIPE_SZ, 4096) >= 0);
  Pipe screen_err = test_pipe();
  boost::asio::io_context io;
  auto console = std::make_unique<Console>(screen.write_end.get(), screen_err.write_end.get(),
                                           gangrun::logmux::ConsoleLimits{32 * 1024, 8 * 1024});
  OutputMux mux(io, *console);
  Pipe worker = test_pipe();
  bool closed = false;
  REQUIRE(
      mux.add_stream(std::move(worker.read_end), route("[w] "), nullptr, [&] { closed = true; }));

  std::string raw;
  for (int i = 0; i < 40000; ++i) raw += "line " + std::to_string(i) + " of a flooding worker\n";
  std::atomic<std::size_t> written{0};
  std::thread flood([&] {
    std::string_view text = raw;
    while (!text.empty()) {
      std::size_t size = std::min<std::size_t>(text.size(), 4096);
      write_text(worker.write_end.get(), text.substr(0, size));
      text.remove_prefix(size);
      written += size;
    }
    worker.write_end.reset();
  });

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!console->congested() && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  REQUIRE(console->congested());

  // The loop stays free for everything else (a blocking console write would
  // never return here).
  boost::asio::steady_timer timer(io);
  bool fired = false;
  timer.expires_after(std::chrono::milliseconds(1));
  timer.async_wait([&](const boost::system::error_code& error) { fired = !error; });
  while (!fired && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  CHECK(fired);
  // Back-pressure: the worker is held up in write(2). What gangrun holds is
  // bounded by the pipes and the queue (each well under 1 MiB), far less
  // than the flood.
  CHECK(written.load() < raw.size() / 2);
  CHECK_FALSE(closed);

  // The reader returns: the stream resumes and everything arrives, in order.
  std::string received;
  std::thread reader([&] {
    char buffer[65536];
    while (true) {
      ssize_t got = ::read(screen.read_end.get(), buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return;
      received.append(buffer, static_cast<std::size_t>(got));
    }
  });
  while (!closed && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  flood.join();
  CHECK(closed);
  console->drain();
  screen.write_end.reset();
  reader.join();

  std::string expected;
  std::istringstream lines(raw);
  for (std::string line; std::getline(lines, line);) expected += "[w] " + line + "\n";
  CHECK(received.size() == expected.size());
  CHECK(received == expected);
}

TEST_CASE("logmux::OutputMux marks the cut pieces of an overlong line", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe pipe = test_pipe();
  StreamRoute r = route("[p] ");
  r.file_path = dir / "p.log";
  REQUIRE(mux.add_stream(std::move(pipe.read_end), r, nullptr, {}));

  constexpr std::size_t k_limit = 64 * 1024;
  std::string line;
  for (std::size_t i = 0; line.size() < 2 * k_limit + 1000; ++i) line += std::to_string(i % 10);
  const std::string raw = line + "\nshort\n" + std::string(k_limit, 'y') + "\n";
  std::thread writer([&] {
    write_text(pipe.write_end.get(), raw);
    pipe.write_end.reset();
  });
  io.run();
  writer.join();

  std::vector<std::string> shown;
  std::istringstream console(screen.out_text());
  for (std::string text; std::getline(console, text);) shown.push_back(text);
  REQUIRE(shown.size() == 5);
  const std::string marker(k_cut_marker);
  CHECK(shown[0] == "[p] " + line.substr(0, k_limit) + marker);
  CHECK(shown[1] == "[p] " + line.substr(k_limit, k_limit) + marker);
  CHECK(shown[2] == "[p] " + line.substr(2 * k_limit));
  CHECK(shown[3] == "[p] short");
  CHECK(shown[4] == "[p] " + std::string(k_limit, 'y'));  // at the limit: not cut

  // The documented way back: strip the marker and the next prefix.
  std::string rejoined;
  for (std::size_t i = 0; i < 3; ++i) {
    std::string_view piece = std::string_view(shown[i]).substr(4);
    if (piece.ends_with(marker)) piece.remove_suffix(marker.size());
    rejoined += piece;
  }
  CHECK(rejoined == line);
  CHECK(read_file(dir / "p.log") == raw);  // the log file is never cut
}

TEST_CASE("logmux::OutputMux reports a log file that lost bytes, once", "[logmux]") {
  // /dev/full fails every write with ENOSPC, as a full disk does.
  REQUIRE(::access("/dev/full", W_OK) == 0);
  std::ostringstream warnings;
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_st>(warnings));
  spdlog::set_default_logger(capture);

  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe full = test_pipe();
  Pipe fine = test_pipe();
  StreamRoute to_full = route("[f] ");
  to_full.file_path = "/dev/full";
  StreamRoute to_disk = route("[g] ");
  to_disk.file_path = dir / "g.log";
  int closed = 0;
  REQUIRE(mux.add_stream(std::move(full.read_end), to_full, nullptr, [&] { ++closed; }));
  REQUIRE(mux.add_stream(std::move(fine.read_end), to_disk, nullptr, [&] { ++closed; }));
  CHECK(mux.incomplete_logs().empty());

  write_text(full.write_end.get(), "first\n");
  io.poll();
  while (mux.incomplete_logs().empty()) REQUIRE(io.run_one_for(std::chrono::seconds(10)) == 1);
  CHECK(mux.incomplete_logs() == std::vector<std::string>{"/dev/full"});  // still open
  write_text(full.write_end.get(), "second\n");
  write_text(fine.write_end.get(), "kept\n");
  full.write_end.reset();
  fine.write_end.reset();
  io.run();
  spdlog::set_default_logger(previous);

  CHECK(closed == 2);
  CHECK(mux.incomplete_logs() == std::vector<std::string>{"/dev/full"});  // and after EOF
  const std::string shown = screen.out_text();  // the console got everything
  CHECK(shown.size() == std::string("[f] first\n[f] second\n[g] kept\n").size());
  CHECK(shown.find("[f] first\n[f] second\n") != std::string::npos);
  CHECK(shown.find("[g] kept\n") != std::string::npos);
  CHECK(read_file(dir / "g.log") == "kept\n");
  const std::string said = warnings.str();
  CHECK(said.find("/dev/full") != std::string::npos);
  CHECK(said.find("No space left on device") != std::string::npos);
  CHECK(said.find("/dev/full", said.find("/dev/full") + 1) == std::string::npos);  // once
}

TEST_CASE("logmux::OutputMux close_all takes a paused stream's pipe and loses nothing",
          "[logmux]") {
  // The gang's drain timer ran out while the console's reader was still
  // stalled: close_all() must not wait for the reader, and the console must
  // still write all of it later.
  Pipe screen = test_pipe();
  REQUIRE(::fcntl(screen.write_end.get(), F_SETPIPE_SZ, 4096) >= 0);
  Pipe screen_err = test_pipe();
  boost::asio::io_context io;
  Console console(screen.write_end.get(), screen_err.write_end.get(),
                  gangrun::logmux::ConsoleLimits{8 * 1024, 2 * 1024});
  OutputMux mux(io, console);
  Pipe worker = test_pipe();
  int closed = 0;
  REQUIRE(mux.add_stream(std::move(worker.read_end), route("[w] "), nullptr, [&] { ++closed; }));

  // Each half is less than the worker pipe holds, so this thread never
  // blocks: the first congests the console, the second stays in the pipe of
  // the paused stream, behind which the worker has exited.
  std::string raw;
  for (int i = 0; raw.size() < 40 * 1024; ++i) raw += "line " + std::to_string(i) + "\n";
  const std::size_t half = raw.find('\n', raw.size() / 2) + 1;
  write_text(worker.write_end.get(), std::string_view(raw).substr(0, half));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!console.congested() && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(100));
  }
  REQUIRE(console.congested());
  write_text(worker.write_end.get(), std::string_view(raw).substr(half));
  worker.write_end.reset();
  io.poll();  // nothing to run: the stream is paused, not waiting on its pipe
  CHECK(mux.open_streams() == 1);

  mux.close_all();
  CHECK(closed == 1);
  CHECK(mux.open_streams() == 0);

  std::string received;
  std::thread reader([&] {
    char buffer[4096];
    while (true) {
      ssize_t got = ::read(screen.read_end.get(), buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return;
      received.append(buffer, static_cast<std::size_t>(got));
    }
  });
  console.drain();
  screen.write_end.reset();
  reader.join();
  std::string expected;
  std::istringstream lines(raw);
  for (std::string line; std::getline(lines, line);) expected += "[w] " + line + "\n";
  CHECK(received == expected);
  io.restart();
  io.poll();  // the resume the console posted finds the stream closed
  CHECK(closed == 1);
}

TEST_CASE("logmux::OutputMux does not repeat a rank's own tag on the console", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe pipe = test_pipe();
  StreamRoute r = route("[rank1]: ", true);
  r.file_path = dir / "1.log";
  TailBuffer tail;
  REQUIRE(mux.add_stream(std::move(pipe.read_end), r, &tail, {}));

  // The continuation of a cut line keeps the prefix even if it begins with
  // the tag, so that stripping the marker and the prefix rejoins the line.
  constexpr std::size_t k_limit = 64 * 1024;
  const std::string cut_line = std::string(k_limit, 'z') + "[rank1]: after the cut";
  const std::string raw =
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:[W1128 10:04:24.922459134 ProcessGroupGloo.cpp:1] c10d says\n"
      "[rank0]: another rank's line\n"
      "plain\n" +
      cut_line + "\n";
  std::thread writer([&] {
    write_text(pipe.write_end.get(), raw);
    pipe.write_end.reset();
  });
  io.run();
  writer.join();

  const std::string marker(k_cut_marker);
  CHECK(screen.err_text() ==
        "[rank1]: Traceback (most recent call last):\n"
        "[rank1]:[W1128 10:04:24.922459134 ProcessGroupGloo.cpp:1] c10d says\n"
        "[rank1]: [rank0]: another rank's line\n"
        "[rank1]: plain\n"
        "[rank1]: " +
            std::string(k_limit, 'z') + marker + "\n[rank1]: [rank1]: after the cut\n");
  CHECK(read_file(dir / "1.log") == raw);  // the file keeps the bytes as written
  CHECK(tail.lines().front() == "[rank1]: Traceback (most recent call last):");
}

TEST_CASE("logmux::OutputMux times a bar's redraw only when it advanced", "[logmux]") {
  OneStream s;
  REQUIRE(s.mux.add_stream(std::move(s.pipe.read_end), route("[p] "), &s.tail, {}, -1));
  // Each write ends the bar before it (tqdm writes "\r" + bar): one more line each time.
  auto draw = [&s](std::string_view bytes) {
    std::size_t lines = s.tail.lines().size();
    write_text(s.pipe.write_end.get(), bytes);
    while (s.tail.lines().size() == lines) s.io.run_one();
  };
  draw("\r 5/10 [00:01<00:05, 1.00it/s]");
  CHECK_FALSE(s.tail.last_line_at());  // a bare "\r" shows nothing
  draw("\r 5/10 [00:02<00:05, 1.00it/s]");
  auto first_draw = s.tail.last_line_at();
  REQUIRE(first_draw);
  draw("\r 5/10 [00:03<00:05, 1.00it/s]");
  draw("\r 6/10 [00:04<00:04, 1.00it/s]");
  CHECK(s.tail.last_line_at() == first_draw);
  draw("\n");
  CHECK(s.tail.last_line_at() > first_draw);
  s.pipe.write_end.reset();
  s.io.run();
  std::string console = s.screen.out_text();
  CHECK(console.find("[p]  5/10 [00:03<00:05, 1.00it/s]\r") != std::string::npos);
  CHECK(console.find("[p]  6/10 [00:04<00:04, 1.00it/s]\n") != std::string::npos);
}
