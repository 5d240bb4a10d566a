// TCP keep-alive for the connections between node agents and the store's
// host: the kernel probes an idle connection every `interval` and gives it
// up when nothing came back for interval x attempts, also while data waits
// to be acknowledged (TCP_USER_TIMEOUT), so no read or write of a cut-off
// peer blocks for minutes. The probes are answered by the peer's kernel, so
// a busy node never misses one.
#pragma once

#include <chrono>

namespace gangrun::store {

struct KeepAlive {
  std::chrono::milliseconds interval{1000};
  int attempts = 3;

  std::chrono::milliseconds timeout() const { return interval * attempts; }
};

// Sets SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT and
// TCP_USER_TIMEOUT on a connected TCP socket. Best effort: a socket that
// refuses an option keeps the kernel's default for it.
void apply_keep_alive(int socket_fd, const KeepAlive& keep_alive);

}  // namespace gangrun::store
