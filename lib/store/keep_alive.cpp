#include "store/keep_alive.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

namespace gangrun::store {

void apply_keep_alive(int socket_fd, const KeepAlive& keep_alive) {
  // Whole seconds for the probes (the kernel's unit), at least one.
  int seconds = std::max(1, static_cast<int>(keep_alive.interval.count() / 1000));
  int probes = std::max(1, keep_alive.attempts) * k_backstop_factor;
  int on = 1;
  // The connection is given up k_backstop_factor x interval x attempts after
  // the peer was last heard: the first probe after `interval` of silence, one
  // every interval after it, and TCP_USER_TIMEOUT ends it then, whatever is
  // pending.
  auto user_timeout =
      static_cast<unsigned>(std::max<long>(1, keep_alive.timeout().count() * k_backstop_factor));
  ::setsockopt(socket_fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(socket_fd, IPPROTO_TCP, TCP_KEEPIDLE, &seconds, sizeof seconds);
  ::setsockopt(socket_fd, IPPROTO_TCP, TCP_KEEPINTVL, &seconds, sizeof seconds);
  ::setsockopt(socket_fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  ::setsockopt(socket_fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

}  // namespace gangrun::store
