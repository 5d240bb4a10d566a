// A real store server for unit tests: loopback, an ephemeral port, its
// io_context run by a thread of its own. Used by the blocking client's and
// the rounds' tests.
#pragma once

#include "store/client.hpp"
#include "store/server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

namespace gangrun::testing {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using store::Client;
using store::ClientSettings;
using store::Dialect;
using store::Server;
using store::ServerSettings;
using store::ServerStats;

// The server on a loopback ephemeral port, its loop run by a thread; rounds
// begin on that thread.
class ThreadedStoreServer {
 public:
  explicit ThreadedStoreServer(ServerSettings settings = {}) : work_(asio::make_work_guard(io_)) {
    settings.host = "127.0.0.1";
    settings.port = 0;
    auto started = Server::start(io_, settings);
    if (!started) FAIL("the store server did not start: " << started.error().describe());
    server_ = std::move(*started);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ThreadedStoreServer() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  ThreadedStoreServer(const ThreadedStoreServer&) = delete;
  ThreadedStoreServer& operator=(const ThreadedStoreServer&) = delete;

  int port() const { return server_->port(); }

  void begin_round(std::uint64_t round) {
    on_loop([&] { server_->begin_round(round); });
  }
  std::optional<std::chrono::steady_clock::time_point> last_round_request() {
    std::optional<std::chrono::steady_clock::time_point> at;
    on_loop([&] { at = server_->last_round_request(); });
    return at;
  }
  ServerStats stats() {
    ServerStats stats;
    on_loop([&] { stats = server_->stats(); });
    return stats;
  }
  Client connect(Dialect dialect = Dialect::validated) {
    ClientSettings settings;
    settings.port = server_->port();
    settings.dialect = dialect;
    settings.connect_timeout = milliseconds(5000);
    settings.timeout = milliseconds(5000);
    Expected<Client> client = Client::connect(settings);
    REQUIRE(client);
    return std::move(*client);
  }

 private:
  template <typename Work>
  void on_loop(Work work) {
    std::promise<void> done;
    asio::post(io_, [&] {
      work();
      done.set_value();
    });
    done.get_future().wait();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace gangrun::testing
