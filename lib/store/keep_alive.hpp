// TCP keep-alive for the connections between node agents and the store's
// host, as a backstop. What finds a stopped, stuck or cut-off peer within
// interval x attempts is the heartbeat (a SET and a CHECK every interval,
// see rendezvous/participant.cpp and rendezvous/coordinator.cpp): it is
// data, which TCP retransmits. A keep-alive probe is sent once and never
// again, so on a network that loses packets a few lost probes in a row would
// end an idle connection (a wait on the next round, a worker's store client)
// of a healthy peer; so the kernel probes every interval and gives a
// connection up only after k_backstop_factor times as long (12 s by default),
// also while data waits to be acknowledged (TCP_USER_TIMEOUT), so no read or
// write of a vanished peer blocks for minutes. The probes are answered by the
// peer's kernel, so a busy node never misses one.
#pragma once

#include <chrono>

namespace gangrun::store {

struct KeepAlive {
  std::chrono::milliseconds interval{1000};
  int attempts = 3;

  // How long the heartbeat waits: the time in which a peer is found lost.
  std::chrono::milliseconds timeout() const { return interval * attempts; }
};

// With 1% of packets lost each way, a probe goes unanswered 2% of the time:
// 3 probes for 3 s lost a connection somewhere in a 32-node job within a
// minute here; 11 or 12 in a row fail about once in 10^19 tries.
constexpr int k_backstop_factor = 4;

// Sets SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT and
// TCP_USER_TIMEOUT on a connected TCP socket, for k_backstop_factor x
// timeout(). Best effort: a socket that refuses an option keeps the kernel's
// default for it.
void apply_keep_alive(int socket_fd, const KeepAlive& keep_alive);

}  // namespace gangrun::store
