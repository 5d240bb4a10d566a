// The connection's life: down -> connecting (attempts with backoff, then the
// handshake) -> up, and back to down whenever a request leaves it out of
// step. Every handler holds the Impl alive and carries the generation of the
// socket it was started on; once the socket was closed (generation bumped)
// or the client destroyed (shut), a late handler does nothing.
#include "store/async_client.hpp"

#include "store/call_queue.hpp"
#include "store/client_common.hpp"
#include "util/host.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>

namespace gangrun::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool closed_by_peer(const boost::system::error_code& error) {
  return error == asio::error::eof || error == asio::error::connection_reset ||
         error == asio::error::broken_pipe;
}

}  // namespace

struct AsyncClient::Impl : std::enable_shared_from_this<Impl> {
  enum class Link { down, connecting, up };

  Impl(asio::io_context& io_context, ClientSettings client_settings)
      : io(io_context),
        settings(std::move(client_settings)),
        where(host::endpoint_text(settings.host, settings.port)),
        socket(io_context),
        connect_timer(io_context),
        retry_timer(io_context),
        cancel_timer(io_context),
        calls(io_context, where, [this] { serving_expired(); }) {}

  asio::io_context& io;
  ClientSettings settings;
  std::string where;
  tcp::socket socket;
  asio::steady_timer connect_timer;  // connect_timeout for attempts and handshake together
  asio::steady_timer retry_timer;    // the pause between attempts
  asio::steady_timer cancel_timer;   // bounds a CANCEL_WAIT exchange
  CallQueue calls;

  Link link = Link::down;
  bool shut = false;             // the AsyncClient is gone
  std::uint64_t generation = 0;  // bumped whenever the socket is closed
  bool reading = false;
  bool writing = false;
  bool cancelling = false;  // CANCEL_WAIT sent after a timed-out WAIT, WAIT_CANCELED not yet read
  std::optional<std::uint32_t> handshake_nonce;  // PING sent, echo not yet read
  std::string received;                          // bytes read and not yet parsed
  std::array<char, 16 * 1024> chunk{};

  std::optional<AsyncClient::Ends> ends;  // of the last connection made

  Clock::time_point connect_started;
  std::string last_problem;
  ConnectBackoff backoff;

  // ---- serving calls in order --------------------------------------------------

  void pump() {
    if (shut || link == Link::connecting || cancelling || calls.serving() || calls.empty()) return;
    if (link == Link::down) return start_connecting();
    PendingCall* call = calls.start_next();
    Expected<std::string> bytes = encode_for(settings.dialect, call->request);
    if (!bytes) {
      calls.finish_serving(bytes.error());
      return pump();
    }
    write(std::move(*bytes));
  }

  void write(std::string bytes) {
    writing = true;
    auto buffer = std::make_shared<std::string>(std::move(bytes));
    asio::async_write(socket, asio::buffer(*buffer),
                      [self = shared_from_this(), buffer, generation = generation](
                          boost::system::error_code error, std::size_t) {
                        if (self->shut || generation != self->generation) return;
                        self->writing = false;
                        if (error) return self->broken(error);
                        self->consume();
                      });
  }

  void arm_read() {
    if (reading) return;
    reading = true;
    socket.async_read_some(asio::buffer(chunk),
                           [self = shared_from_this(), generation = generation](
                               boost::system::error_code error, std::size_t count) {
                             if (self->shut || generation != self->generation) return;
                             self->reading = false;
                             if (error) return self->broken(error);
                             self->received.append(self->chunk.data(), count);
                             if (self->received.size() > k_max_unparsed_reply_bytes) {
                               return self->broken(asio::error::message_size);
                             }
                             self->consume();
                           });
  }

  // Parses what has arrived for whoever expects bytes now: the handshake, a
  // CANCEL_WAIT exchange, or the call being served.
  void consume() {
    if (writing) return;  // its handler comes back here
    ReplyReader reader(received);
    if (handshake_nonce) return read_handshake(reader);
    if (cancelling) return read_cancel(reader);
    PendingCall* call = calls.serving();
    if (!call) {
      if (!received.empty()) drop_connection();  // bytes nobody asked for
      return;
    }
    Expected<bool> complete = call->read_reply(reader);
    if (!complete) {
      Op op = call->request.op;
      drop_connection();
      calls.finish_serving(malformed_reply_error(op, where, complete.error().message()));
      return pump();
    }
    if (!*complete) return arm_read();
    received.erase(0, reader.consumed());
    calls.finish_serving(std::nullopt);
    pump();
  }

  // The connection failed under whatever was using it.
  void broken(const boost::system::error_code& error) {
    if (link == Link::connecting) {
      last_problem = handshake_failed(Error(ErrorCode::store, error.message())).message();
      close_socket();
      return retry_later();
    }
    drop_connection();
    if (cancelling) {
      cancelling = false;
      return pump();
    }
    if (PendingCall* call = calls.serving()) {
      Op op = call->request.op;
      calls.finish_serving(closed_by_peer(error) ? closed_error(op, where)
                                                 : failed_error(op, where, error.message()));
    }
    pump();
  }

  // The deadline of the call being served passed (CallQueue).
  void serving_expired() {
    PendingCall* call = calls.serving();
    Error error = calls.timeout_error(*call);
    if (call->request.op == Op::wait && settings.dialect == Dialect::validated && !writing) {
      start_cancel();
    } else {
      // Out of step: its reply may still come, and would answer the next request.
      drop_connection();
    }
    calls.finish_serving(std::move(error));
    pump();
  }

  // ---- cancelling a timed-out WAIT ------------------------------------------------

  // The server still holds the wait, and its STOP_WAITING may already be on
  // the way: CANCEL_WAIT, then read until WAIT_CANCELED, dropping that
  // STOP_WAITING, as PyTorch 2.x does. Later calls queue meanwhile.
  void start_cancel() {
    cancelling = true;
    write(*encode_for(Dialect::validated, make_request(Op::cancel_wait)));
    cancel_timer.expires_after(settings.timeout);
    cancel_timer.async_wait(
        [self = shared_from_this(), generation = generation](boost::system::error_code error) {
          if (error || self->shut || generation != self->generation || !self->cancelling) return;
          self->cancelling = false;
          self->drop_connection();
          self->pump();
        });
  }

  void read_cancel(ReplyReader& reader) {
    for (;;) {
      std::optional<std::uint8_t> reply = reader.read_u8();
      if (!reply) {
        received.erase(0, reader.consumed());
        return arm_read();
      }
      if (*reply == k_wait_stop_waiting) continue;
      received.erase(0, reader.consumed());
      cancelling = false;
      cancel_timer.cancel();
      if (*reply != k_wait_canceled) drop_connection();
      return pump();
    }
  }

  // ---- connecting ---------------------------------------------------------------

  void start_connecting() {
    link = Link::connecting;
    connect_started = Clock::now();
    last_problem.clear();
    backoff = ConnectBackoff();
    connect_timer.expires_after(settings.connect_timeout);
    connect_timer.async_wait([self = shared_from_this()](boost::system::error_code error) {
      if (error || self->shut || self->link != Link::connecting) return;
      self->give_up();
    });
    attempt();
  }

  void attempt() {
    tcp::resolver resolver(io);
    boost::system::error_code error;
    // Synchronous on purpose: Asio's async_resolve runs on a hidden thread.
    auto addresses = resolver.resolve(settings.host, std::to_string(settings.port), error);
    if (error || addresses.empty()) {
      last_problem = error ? "cannot resolve " + settings.host + ": " + error.message()
                           : settings.host + " has no address";
      return retry_later();
    }
    std::vector<tcp::endpoint> endpoints;
    for (const auto& entry : addresses) endpoints.push_back(entry.endpoint());
    try_endpoint(std::move(endpoints), 0);
  }

  // Each address in turn, as the blocking client does.
  void try_endpoint(std::vector<tcp::endpoint> endpoints, std::size_t index) {
    close_socket();
    tcp::endpoint endpoint = endpoints[index];
    socket.async_connect(endpoint, [self = shared_from_this(), generation = generation,
                                    endpoints = std::move(endpoints),
                                    index](boost::system::error_code error) mutable {
      if (self->shut || generation != self->generation || self->link != Link::connecting) return;
      if (error) {
        self->last_problem = error.message();
        if (index + 1 < endpoints.size())
          return self->try_endpoint(std::move(endpoints), index + 1);
        self->close_socket();
        return self->retry_later();
      }
      boost::system::error_code ignored;
      self->remember_ends();
      self->socket.set_option(tcp::no_delay(true), ignored);
      if (self->settings.keep_alive) {
        apply_keep_alive(self->socket.native_handle(), *self->settings.keep_alive);
      }
      self->connected();
    });
  }

  void remember_ends() {
    boost::system::error_code local_error;
    boost::system::error_code remote_error;
    tcp::endpoint local = socket.local_endpoint(local_error);
    tcp::endpoint remote = socket.remote_endpoint(remote_error);
    if (local_error || remote_error) return;
    ends = AsyncClient::Ends{.local_address = local.address().to_string(),
                             .store_address = remote.address().to_string()};
  }

  void retry_later() {
    auto left = std::chrono::duration_cast<milliseconds>(connect_started +
                                                         settings.connect_timeout - Clock::now());
    retry_timer.expires_after(std::max(milliseconds(0), std::min(backoff.next_pause(), left)));
    retry_timer.async_wait([self = shared_from_this()](boost::system::error_code error) {
      if (error || self->shut || self->link != Link::connecting) return;
      self->attempt();
    });
  }

  // PyTorch 2.x opens every connection with VALIDATE and checks that PING's
  // nonce comes back; the legacy dialect has no handshake.
  void connected() {
    if (settings.dialect != Dialect::validated) return up();
    handshake_nonce = static_cast<std::uint32_t>(::getpid());
    last_problem = "no answer to the VALIDATE + PING handshake";
    write(handshake_bytes(*handshake_nonce));
  }

  void read_handshake(ReplyReader& reader) {
    std::optional<std::uint32_t> echo = reader.read_u32();
    if (!echo) return arm_read();
    received.erase(0, reader.consumed());
    const std::uint32_t nonce = *handshake_nonce;
    handshake_nonce.reset();
    if (*echo == nonce) return up();
    // Not retried: this server is up, but it is not a 2.x store.
    fail_connecting(handshake_mismatch(where, nonce, *echo));
  }

  void up() {
    link = Link::up;
    connect_timer.cancel();
    pump();
  }

  void give_up() {
    auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - connect_started);
    fail_connecting(unreachable_error(
        where, waited, last_problem.empty() ? std::string("connection timed out") : last_problem));
  }

  // Every queued call was waiting for this connection; the next one tries anew.
  void fail_connecting(const Error& error) {
    close_socket();
    link = Link::down;
    connect_timer.cancel();
    retry_timer.cancel();
    calls.fail_all(error);
  }

  // ---- closing --------------------------------------------------------------------

  void close_socket() {
    ++generation;
    boost::system::error_code ignored;
    socket.close(ignored);
    received.clear();
    reading = false;
    writing = false;
    handshake_nonce.reset();
  }

  // The next call connects again.
  void drop_connection() {
    close_socket();
    link = Link::down;
  }

  void shut_down() {
    shut = true;
    calls.abandon();
    close_socket();
    connect_timer.cancel();
    retry_timer.cancel();
    cancel_timer.cancel();
  }
};

AsyncClient::AsyncClient(asio::io_context& io, ClientSettings settings)
    : impl_(std::make_shared<Impl>(io, std::move(settings))) {}

// Only Asio's timer cancel() is declared to throw, and it never fails for a steady
// timer; were it to, ending the program is right.
// NOLINTNEXTLINE(bugprone-exception-escape)
AsyncClient::~AsyncClient() { impl_->shut_down(); }

void AsyncClient::submit(PendingCall call) {
  impl_->calls.push(std::move(call));
  impl_->pump();
}

std::optional<AsyncClient::Ends> AsyncClient::connection_ends() const { return impl_->ends; }

std::chrono::milliseconds AsyncClient::default_timeout() const { return impl_->settings.timeout; }

}  // namespace gangrun::store
