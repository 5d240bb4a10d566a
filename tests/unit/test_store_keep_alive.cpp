// apply_keep_alive (store/keep_alive.hpp): the kernel's keep-alive is the
// backstop behind the heartbeats, four times their timeout, so that a few
// lost probes on a lossy network never end a healthy peer's idle connection.
#include "store/keep_alive.hpp"
#include "util/fd.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>

namespace {

int option(int fd, int level, int name) {
  int value = 0;
  socklen_t size = sizeof value;
  REQUIRE(::getsockopt(fd, level, name, &value, &size) == 0);
  return value;
}

}  // namespace

TEST_CASE("keep-alive probes every interval and gives up after four heartbeat timeouts",
          "[store]") {
  gangrun::UniqueFd socket(::socket(AF_INET, SOCK_STREAM, 0));
  REQUIRE(socket.get() >= 0);
  gangrun::store::apply_keep_alive(socket.get(),
                                   gangrun::store::KeepAlive{std::chrono::milliseconds(2000), 3});
  CHECK(option(socket.get(), SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(option(socket.get(), IPPROTO_TCP, TCP_KEEPIDLE) == 2);
  CHECK(option(socket.get(), IPPROTO_TCP, TCP_KEEPINTVL) == 2);
  CHECK(option(socket.get(), IPPROTO_TCP, TCP_KEEPCNT) == 12);
  CHECK(option(socket.get(), IPPROTO_TCP, TCP_USER_TIMEOUT) == 24000);
}
