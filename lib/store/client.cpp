// The client runs Asio's asynchronous operations on a private io_context and
// drives it with run_until(deadline): that gives every read, write and
// connect a deadline without a thread or a timer. An operation still pending
// at its deadline is cancelled and its handler drained before returning, so
// nothing outlives the call.
//
// A connection that timed out, broke or answered nonsense in the middle of a
// request is out of step with the server: it is closed, and the next
// operation connects again.
#include "store/client.hpp"

#include "store/client_common.hpp"
#include "store/codec.hpp"
#include "util/host.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <thread>

namespace gangrun::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::string_view k_connect_timed_out = "connection timed out";

enum class Io { ok, timed_out, closed, failed };
struct IoResult {
  Io status = Io::ok;
  boost::system::error_code error;
};

IoResult io_result(const boost::system::error_code& error) {
  if (!error) return {};
  if (error == asio::error::operation_aborted) return {Io::timed_out, error};
  if (error == asio::error::eof || error == asio::error::connection_reset ||
      error == asio::error::broken_pipe) {
    return {Io::closed, error};
  }
  return {Io::failed, error};
}

}  // namespace

struct Client::Impl {
  explicit Impl(const ClientSettings& s)
      : settings(s), where(host::endpoint_text(s.host, s.port)) {}

  ClientSettings settings;
  std::string where;  // "host:port" for messages
  asio::io_context io;
  tcp::socket socket{io};
  std::string received;  // bytes read and not yet parsed into a reply
  std::array<char, 64 * 1024> chunk{};

  // ---- running one asynchronous operation to a deadline -----------------

  // Runs the io_context until the pending operation's handler set `done`, or
  // the deadline passed; then the operation is cancelled and drained, so its
  // handler reports operation_aborted (unless it had finished just then).
  void run_until(Clock::time_point deadline, const bool& done) {
    io.restart();
    io.run_until(deadline);
    if (done) return;
    boost::system::error_code ignored;
    socket.cancel(ignored);
    io.restart();
    io.run();
  }

  IoResult write_bytes(std::string_view bytes, Clock::time_point deadline) {
    bool done = false;
    boost::system::error_code error;
    asio::async_write(socket, asio::buffer(bytes.data(), bytes.size()),
                      [&](const boost::system::error_code& e, std::size_t) {
                        error = e;
                        done = true;
                      });
    run_until(deadline, done);
    return io_result(error);
  }

  IoResult read_more(Clock::time_point deadline) {
    if (received.size() > k_max_unparsed_reply_bytes) {
      return {Io::failed, asio::error::message_size};
    }
    bool done = false;
    boost::system::error_code error;
    std::size_t count = 0;
    socket.async_read_some(asio::buffer(chunk),
                           [&](const boost::system::error_code& e, std::size_t n) {
                             error = e;
                             count = n;
                             done = true;
                           });
    run_until(deadline, done);
    received.append(chunk.data(), count);
    return io_result(error);
  }

  // ---- connection ----------------------------------------------------------

  void close() {
    boost::system::error_code ignored;
    socket.close(ignored);
    received.clear();
  }

  // One attempt: resolve, then try every address until one connects. On
  // failure returns what went wrong, for the final message.
  std::optional<std::string> try_connect(Clock::time_point deadline) {
    tcp::resolver resolver(io);
    boost::system::error_code error;
    // Synchronous on purpose: Asio's async_resolve runs on a hidden thread.
    tcp::resolver::results_type addresses =
        resolver.resolve(settings.host, std::to_string(settings.port), error);
    if (error) return fmt::format("cannot resolve {}: {}", settings.host, error.message());
    if (addresses.empty()) return fmt::format("{} has no address", settings.host);
    // Each address in turn, by hand: Asio's range async_connect would go on
    // to the next address after our deadline cancelled the current one.
    for (const tcp::resolver::results_type::value_type& entry : addresses) {
      if (Clock::now() >= deadline && error) break;
      close();
      bool done = false;
      socket.async_connect(entry.endpoint(), [&](const boost::system::error_code& e) {
        error = e;
        done = true;
      });
      run_until(deadline, done);
      if (!error) break;
    }
    if (error == asio::error::operation_aborted) return std::string(k_connect_timed_out);
    if (error) return error.message();
    socket.set_option(tcp::no_delay(true), error);
    return std::nullopt;
  }

  Expected<void> connect() {
    close();
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + settings.connect_timeout;
    ConnectBackoff backoff;
    std::string last_problem;
    for (;;) {
      std::optional<std::string> problem = try_connect(deadline);
      if (!problem) break;
      close();
      // An attempt cut short by the deadline says less than the one before.
      if (last_problem.empty() || *problem != k_connect_timed_out) last_problem = *problem;
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        auto waited = std::chrono::duration_cast<milliseconds>(now - start);
        return tl::unexpected(unreachable_error(where, waited, last_problem));
      }
      auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
      std::this_thread::sleep_for(std::min(backoff.next_pause(), left));
    }
    if (settings.dialect == Dialect::validated) return handshake();
    return {};
  }

  // PyTorch 2.x opens every connection with VALIDATE and checks that PING's
  // nonce comes back. Not retried: a server that takes the connection and
  // then refuses this is up, but is not a 2.x store.
  Expected<void> handshake() {
    const auto nonce = static_cast<std::uint32_t>(::getpid());
    Expected<std::uint32_t> echo =
        exchange<std::uint32_t>(Op::ping, handshake_bytes(nonce), read_u32);
    if (!echo) return tl::unexpected(handshake_failed(echo.error()));
    if (*echo != nonce) {
      close();
      return tl::unexpected(handshake_mismatch(where, nonce, *echo));
    }
    return {};
  }

  Expected<void> ensure_connected() {
    if (socket.is_open()) return {};
    return connect();
  }

  // ---- requests and replies ------------------------------------------------

  Error io_error(Op op, IoResult result, milliseconds budget) {
    close();
    switch (result.status) {
      case Io::timed_out:
        return timed_out_error(make_request(op), where, budget);
      case Io::closed:
        return closed_error(op, where);
      case Io::ok:
      case Io::failed:
        break;
    }
    return failed_error(op, where, result.error.message());
  }

  Error protocol_error(Op op, const std::string& what) {
    close();
    return malformed_reply_error(op, where, what);
  }

  Expected<std::string> encode(const Request& request) const {
    return encode_for(settings.dialect, request);
  }

  Expected<void> send_bytes(Op op, std::string_view bytes) {
    IoResult written = write_bytes(bytes, Clock::now() + settings.timeout);
    if (written.status != Io::ok) return tl::unexpected(io_error(op, written, settings.timeout));
    return {};
  }

  // Connects if needed and sends a request that has no reply.
  Expected<void> send(const Request& request) {
    Expected<std::string> bytes = encode(request);
    if (!bytes) return tl::unexpected(bytes.error());
    if (Expected<void> up = ensure_connected(); !up) return up;
    return send_bytes(request.op, *bytes);
  }

  // Reads until parse finds a whole reply, within the settings' timeout.
  template <typename T, typename Parse>
  Expected<T> receive(Op op, Parse parse) {
    const Clock::time_point deadline = Clock::now() + settings.timeout;
    for (;;) {
      ReplyReader reader(received);
      Parsed<T> parsed = parse(reader);
      if (!parsed) return tl::unexpected(protocol_error(op, parsed.error().message()));
      if (*parsed) {
        received.erase(0, reader.consumed());
        return std::move(**parsed);
      }
      IoResult more = read_more(deadline);
      if (more.status != Io::ok) return tl::unexpected(io_error(op, more, settings.timeout));
    }
  }

  // Sends bytes (on a connection that is already up) and reads one reply.
  template <typename T, typename Parse>
  Expected<T> exchange(Op op, std::string_view bytes, Parse parse) {
    if (Expected<void> sent = send_bytes(op, bytes); !sent) return tl::unexpected(sent.error());
    return receive<T>(op, parse);
  }

  // Connects if needed, sends request and reads its reply.
  template <typename T, typename Parse>
  Expected<T> call(const Request& request, Parse parse) {
    Expected<std::string> bytes = encode(request);
    if (!bytes) return tl::unexpected(bytes.error());
    if (Expected<void> up = ensure_connected(); !up) return tl::unexpected(up.error());
    return exchange<T>(request.op, *bytes, parse);
  }

  // ---- waiting ---------------------------------------------------------------

  Expected<void> wait(const std::vector<std::string>& keys, milliseconds budget) {
    Expected<void> sent = send(make_request(Op::wait, keys));
    if (!sent) return sent;
    const Clock::time_point deadline = Clock::now() + budget;
    for (;;) {
      ReplyReader reader(received);
      Parsed<bool> stopped = read_stop_waiting(reader);
      if (!stopped) return tl::unexpected(protocol_error(Op::wait, stopped.error().message()));
      if (*stopped) {
        received.erase(0, reader.consumed());
        return {};
      }
      IoResult more = read_more(deadline);
      if (more.status == Io::timed_out) return abandon_wait(keys, budget);
      if (more.status != Io::ok) return tl::unexpected(io_error(Op::wait, more, budget));
    }
  }

  // After a wait timed out the server still holds it. A 2.x server cancels
  // it on CANCEL_WAIT (its STOP_WAITING may already be on the way, and is
  // dropped); a 1.13 server cannot, and would answer the abandoned wait on
  // this socket later, so the connection is closed and the next operation
  // opens a new one (not now: the caller gets its timeout without waiting
  // on a store that may be gone).
  Expected<void> abandon_wait(const std::vector<std::string>& keys, milliseconds budget) {
    Error timed_out = timed_out_error(make_request(Op::wait, keys), where, budget);
    if (settings.dialect == Dialect::legacy) {
      close();
      return tl::unexpected(timed_out);
    }
    Expected<std::string> cancel = encode(make_request(Op::cancel_wait));
    if (!cancel) return tl::unexpected(cancel.error());
    if (Expected<void> sent = send_bytes(Op::cancel_wait, *cancel); !sent) return sent;
    for (;;) {
      Expected<std::uint8_t> reply = receive<std::uint8_t>(Op::cancel_wait, read_u8);
      if (!reply) return tl::unexpected(reply.error());
      if (*reply == k_wait_canceled) return tl::unexpected(timed_out);
      if (*reply != k_wait_stop_waiting) {
        return tl::unexpected(protocol_error(
            Op::cancel_wait, fmt::format("reply byte {}, not WAIT_CANCELED", *reply)));
      }
    }
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Expected<Client> Client::connect(const ClientSettings& settings) {
  auto impl = std::make_unique<Impl>(settings);
  if (Expected<void> up = impl->connect(); !up) return tl::unexpected(up.error());
  return Client(std::move(impl));
}

Expected<void> Client::set(const std::string& key, const std::string& value) {
  return impl_->send(make_request(Op::set, {key}, {value}));
}

Expected<std::string> Client::get(const std::string& key) {
  if (Expected<void> ready = wait({key}); !ready) return tl::unexpected(ready.error());
  return impl_->call<std::string>(make_request(Op::get, {key}), read_blob);
}

Expected<std::int64_t> Client::add(const std::string& key, std::int64_t delta) {
  return impl_->call<std::int64_t>(make_request(Op::add, {key}, {}, delta), read_i64);
}

Expected<std::string> Client::compare_set(const std::string& key, const std::string& expected,
                                          const std::string& desired) {
  return impl_->call<std::string>(make_request(Op::compare_set, {key}, {expected, desired}),
                                  read_blob);
}

Expected<bool> Client::check(const std::vector<std::string>& keys) {
  return impl_->call<bool>(make_request(Op::check, keys), read_check);
}

Expected<void> Client::wait(const std::vector<std::string>& keys,
                            std::optional<std::chrono::milliseconds> timeout) {
  return impl_->wait(keys, timeout.value_or(impl_->settings.timeout));
}

Expected<std::int64_t> Client::num_keys() {
  return impl_->call<std::int64_t>(make_request(Op::num_keys), read_i64);
}

Expected<bool> Client::delete_key(const std::string& key) {
  return impl_->call<bool>(make_request(Op::delete_key, {key}), read_deleted);
}

Expected<void> Client::append(const std::string& key, const std::string& value) {
  return impl_->send(make_request(Op::append, {key}, {value}));
}

Expected<std::vector<std::string>> Client::multi_get(const std::vector<std::string>& keys) {
  if (Expected<void> ready = wait(keys); !ready) return tl::unexpected(ready.error());
  return impl_->call<std::vector<std::string>>(
      make_request(Op::multi_get, keys),
      [count = keys.size()](ReplyReader& reader) { return read_blobs(reader, count); });
}

Expected<void> Client::multi_set(const std::vector<std::string>& keys,
                                 const std::vector<std::string>& values) {
  if (keys.size() != values.size()) {
    return fail(ErrorCode::usage,
                fmt::format("MULTI_SET of {} keys with {} values", keys.size(), values.size()));
  }
  return impl_->send(make_request(Op::multi_set, keys, values));
}

Expected<std::vector<std::string>> Client::list_keys() {
  return impl_->call<std::vector<std::string>>(make_request(Op::list_keys), read_key_list);
}

Expected<std::uint32_t> Client::ping(std::uint32_t nonce) {
  return impl_->call<std::uint32_t>(make_request(Op::ping, {}, {}, 0, nonce), read_u32);
}

}  // namespace gangrun::store
