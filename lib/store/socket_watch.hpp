// Readiness of many sockets through one epoll instance of their own, which
// the io_context watches as a single descriptor. Unlike an Asio socket, a
// socket here is registered once (level-triggered) and stays registered:
// waiting to read costs no syscall, where Asio's reactor either tries a read
// that fails with EAGAIN or re-registers the socket (epoll_ctl) for every
// wait, and an accepted socket that is already non-blocking needs no ioctl.
// The store server keeps its connections here (server.cpp).
#pragma once

#include "util/error.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace gangrun::store {

class SocketWatch {
 public:
  // What a socket is watched for; errors and hang-ups are always reported.
  struct Interest {
    bool read = false;
    bool write = false;
    bool operator==(const Interest&) const = default;
  };
  // Called from the io_context for each ready socket with the key it was
  // added under. readable and writable are both set on an error or a hang-up,
  // so that the read or write that follows sees it. Must not throw.
  using ReadyHandler = std::function<void(std::uint64_t key, bool readable, bool writable)>;

  // Creates the epoll instance and starts watching it on io. Fails with
  // ErrorCode::store when the kernel refuses one (out of descriptors).
  static Expected<std::unique_ptr<SocketWatch>> create(boost::asio::io_context& io,
                                                       ReadyHandler on_ready);
  ~SocketWatch();  // stops watching; the sockets themselves are their owners' to close
  SocketWatch(const SocketWatch&) = delete;
  SocketWatch& operator=(const SocketWatch&) = delete;

  // Starts watching socket_fd (the caller keeps owning it; closing it ends
  // the watch without a call here). False with errno set when the kernel
  // refuses (out of memory).
  bool add(int socket_fd, std::uint64_t key, Interest interest);
  // Changes what a watched socket is watched for. False with errno set when
  // the kernel refuses.
  bool change(int socket_fd, std::uint64_t key, Interest interest);

 private:
  SocketWatch(boost::asio::io_context& io, int epoll_fd, ReadyHandler on_ready);
  void arm();
  void dispatch_ready();

  boost::asio::posix::stream_descriptor epoll_;
  ReadyHandler on_ready_;
  // False once this is gone, for a wait the io_context completes afterwards.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace gangrun::store
