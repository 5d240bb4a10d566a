#include "logmux/console.hpp"
#include "logmux/output_mux.hpp"
#include "logmux/tail_buffer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/pipe.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
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
using gangrun::logmux::OutputMux;
using gangrun::logmux::StreamRoute;
using gangrun::logmux::TailBuffer;
using Lines = std::vector<std::string>;

using gangrun::Pipe;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "logmux_test_XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

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
  CHECK(read_file(screen.out_path) ==
        "[rank0]: hello\n[rank0]: progress 10%\r[rank0]: progress 20%\r[rank0]: done\r\n"
        "[rank0]: unterminated\n");
  CHECK(read_file(screen.err_path) == "[rank1]: e1\n[rank1]: e2\n");
  CHECK(read_file(dir / "0/stdout.log") == raw0);
  CHECK(read_file(dir / "2.log") == "only in the file\n");
  CHECK(tail0.lines() == Lines{"hello", "progress 10%", "progress 20%", "done", "unterminated"});
  CHECK(tail1.lines() == Lines{"e1", "e2"});
}

TEST_CASE("logmux::OutputMux flushes a fragment when the worker goes quiet", "[logmux]") {
  TempDir dir;
  ConsoleFiles screen(dir);
  boost::asio::io_context io;
  OutputMux mux(io, screen.console);
  Pipe pipe = test_pipe();
  TailBuffer tail;
  int closed = 0;
  StreamRoute r = route("[p] ");
  r.file_path = dir / "p.log";
  REQUIRE(mux.add_stream(
      std::move(pipe.read_end), r, &tail, [&] { ++closed; }, 30));

  write_text(pipe.write_end.get(), "line\nabc");
  io.run_for(std::chrono::milliseconds(300));
  CHECK(read_file(screen.out_path) == "[p] line\n[p] abc\n");
  CHECK(mux.open_streams() == 1);

  write_text(pipe.write_end.get(), "def\n");
  pipe.write_end.reset();
  io.restart();
  io.run();
  CHECK(closed == 1);
  CHECK(read_file(screen.out_path) == "[p] line\n[p] abc\n[p] def\n");
  CHECK(read_file(dir / "p.log") == "line\nabcdef\n");
  CHECK(tail.lines() == Lines{"line", "abc", "def"});
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
  CHECK(read_file(screen.out_path).empty());
  write_text(pipe.write_end.get(), "def");
  pipe.write_end.reset();
  io.restart();
  io.run();
  CHECK(read_file(screen.out_path) == "[p] abcdef\n");
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
  std::istringstream console(read_file(screen.out_path));
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
  CHECK(read_file(screen.out_path) == "[a] one\n[a] two\n[a] partial\n[b] bee\n");

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
  CHECK(read_file(screen.out_path).find("frag") == std::string::npos);
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
