// SocketWatch (store/socket_watch.hpp): sockets registered once are reported
// when ready for what they are watched for, under their key, and not after
// the watch is changed or the socket closed.
#include "store/socket_watch.hpp"
#include "util/fd.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace {

using gangrun::UniqueFd;
using gangrun::store::SocketWatch;

struct Report {
  std::uint64_t key;
  bool readable;
  bool writable;
};

struct SocketPair {
  UniqueFd ours;
  UniqueFd theirs;
};

SocketPair socket_pair() {
  int fds[2] = {-1, -1};
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Runs the io_context long enough for ready sockets to be reported.
void turn(boost::asio::io_context& io) {
  io.restart();
  io.run_for(std::chrono::milliseconds(50));
}

}  // namespace

TEST_CASE("socket watch: reports readable and writable sockets under their keys", "[store]") {
  boost::asio::io_context io;
  std::vector<Report> reports;
  auto watch = SocketWatch::create(io, [&](std::uint64_t key, bool readable, bool writable) {
    reports.push_back({key, readable, writable});
  });
  REQUIRE(watch.has_value());
  SocketPair pair = socket_pair();
  REQUIRE((*watch)->add(pair.ours.get(), 7, {.read = true}));

  turn(io);
  CHECK(reports.empty());  // nothing sent yet: no report, and no read tried

  REQUIRE(::write(pair.theirs.get(), "x", 1) == 1);
  turn(io);
  REQUIRE(!reports.empty());
  CHECK(reports.front().key == 7);
  CHECK(reports.front().readable);
  CHECK_FALSE(reports.front().writable);

  // Level-triggered, and changed at will: watched for writing only, an
  // unread byte no longer counts, an empty send buffer does.
  reports.clear();
  REQUIRE((*watch)->change(pair.ours.get(), 7, {.write = true}));
  turn(io);
  REQUIRE(!reports.empty());
  CHECK_FALSE(reports.front().readable);
  CHECK(reports.front().writable);

  // Closing the socket ends its watch.
  reports.clear();
  pair.ours.reset();
  turn(io);
  CHECK(reports.empty());
}

TEST_CASE("socket watch: a hang-up is reported as readable and writable", "[store]") {
  boost::asio::io_context io;
  std::vector<Report> reports;
  auto watch = SocketWatch::create(io, [&](std::uint64_t key, bool readable, bool writable) {
    reports.push_back({key, readable, writable});
  });
  REQUIRE(watch.has_value());
  SocketPair pair = socket_pair();
  REQUIRE((*watch)->add(pair.ours.get(), 3, {}));
  pair.theirs.reset();
  ::shutdown(pair.ours.get(), SHUT_WR);
  turn(io);
  REQUIRE(!reports.empty());
  CHECK(reports.front().key == 3);
  CHECK(reports.front().readable);
  CHECK(reports.front().writable);
}
