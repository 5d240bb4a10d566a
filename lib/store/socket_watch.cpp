#include "store/socket_watch.hpp"

#include <sys/epoll.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace gangrun::store {
namespace {

// Sockets taken from the epoll instance per turn of the io_context: enough
// for a storm's burst, few enough that timers and listeners get their turn.
constexpr int k_events_per_turn = 256;

std::uint32_t epoll_events(SocketWatch::Interest interest) {
  return (interest.read ? EPOLLIN : 0u) | (interest.write ? EPOLLOUT : 0u);
}

}  // namespace

Expected<std::unique_ptr<SocketWatch>> SocketWatch::create(boost::asio::io_context& io,
                                                           ReadyHandler on_ready) {
  int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    return fail(ErrorCode::store,
                std::string("cannot watch the store's connections: ") + std::strerror(errno));
  }
  std::unique_ptr<SocketWatch> watch(new SocketWatch(io, epoll_fd, std::move(on_ready)));
  watch->arm();
  return watch;
}

SocketWatch::SocketWatch(boost::asio::io_context& io, int epoll_fd, ReadyHandler on_ready)
    : epoll_(io, epoll_fd), on_ready_(std::move(on_ready)) {}

SocketWatch::~SocketWatch() {
  *alive_ = false;
  boost::system::error_code ignored;
  epoll_.close(ignored);
}

bool SocketWatch::add(int socket_fd, std::uint64_t key, Interest interest) {
  epoll_event event{};
  event.events = epoll_events(interest);
  event.data.u64 = key;
  return ::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, socket_fd, &event) == 0;
}

bool SocketWatch::change(int socket_fd, std::uint64_t key, Interest interest) {
  epoll_event event{};
  event.events = epoll_events(interest);
  event.data.u64 = key;
  return ::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_MOD, socket_fd, &event) == 0;
}

void SocketWatch::arm() {
  epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this, alive = alive_](boost::system::error_code error) {
                      if (!*alive || error) return;  // error: closed, or cancelled
                      dispatch_ready();
                      if (*alive) arm();
                    });
}

void SocketWatch::dispatch_ready() {
  std::shared_ptr<bool> alive = alive_;  // this may be gone after a handler
  std::array<epoll_event, k_events_per_turn> events{};
  int ready = ::epoll_wait(epoll_.native_handle(), events.data(), k_events_per_turn, 0);
  for (std::size_t i = 0; ready > 0 && i < static_cast<std::size_t>(ready); ++i) {
    const epoll_event& event = events[i];
    bool failed = (event.events & (EPOLLERR | EPOLLHUP)) != 0;
    on_ready_(event.data.u64, failed || (event.events & EPOLLIN) != 0,
              failed || (event.events & EPOLLOUT) != 0);
    // A handler may have closed the server, and this watch with it.
    if (!*alive) return;
  }
}

}  // namespace gangrun::store
