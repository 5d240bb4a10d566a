#include "observe/metrics_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <list>
#include <optional>

namespace gangrun::observe {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  std::string host = address.to_string();
  if (address.is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

}  // namespace

struct MetricsServer::Impl : std::enable_shared_from_this<MetricsServer::Impl> {
  // One connection: one request read within the deadline, one answer.
  struct Session : std::enable_shared_from_this<Session> {
    Session(tcp::socket socket, std::size_t max_header_bytes)
        : stream(std::move(socket)), buffer(max_header_bytes) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;  // bounded: a longer header fails the read
    std::optional<http::request_parser<http::empty_body>> parser;
    http::response<http::string_body> response;
    std::list<std::shared_ptr<Session>>::iterator place;
    bool listed = false;
  };

  Impl(asio::io_context& io, MetricsServerSettings given, MetricsSources from)
      : settings(std::move(given)), sources(std::move(from)), acceptor(io), retry(io) {}

  Expected<void> listen() {
    error_code error;
    tcp::resolver resolver(acceptor.get_executor());
    auto found = resolver.resolve(settings.host, std::to_string(settings.port),
                                  tcp::resolver::numeric_service, error);
    if (error || found.empty()) {
      return fail_usage("--metrics-addr " + settings.host + ":" + std::to_string(settings.port) +
                        ": cannot resolve " + settings.host + ": " + error.message());
    }
    const tcp::endpoint endpoint = found.begin()->endpoint();
    const std::string where = "--metrics-addr " + endpoint_text(endpoint);
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error) acceptor.bind(endpoint, error);
    if (error == std::errc::address_not_available) {
      return fail_usage(where + ": not an address of this host (" + error.message() + ")");
    }
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error) return fail(ErrorCode::store, where + ": cannot listen: " + error.message());
    return {};
  }

  void accept() {
    acceptor.async_accept([self = weak_from_this()](error_code error, tcp::socket socket) {
      auto impl = self.lock();
      if (!impl || error == asio::error::operation_aborted) return;
      if (error) return impl->accept_later();  // out of descriptors: do not spin
      impl->admit(std::move(socket));
      impl->accept();
    });
  }

  void accept_later() {
    retry.expires_after(std::chrono::milliseconds(100));
    retry.async_wait([self = weak_from_this()](error_code error) {
      auto impl = self.lock();
      if (impl && !error) impl->accept();
    });
  }

  void admit(tcp::socket socket) {
    // The oldest has had the longest to send its request: closing it is
    // what a flood of idle sockets costs, never the newcomer.
    while (sessions.size() >= settings.max_connections) close(sessions.front());
    auto session = std::make_shared<Session>(std::move(socket), settings.max_header_bytes);
    session->place = sessions.insert(sessions.end(), session);
    session->listed = true;
    session->parser.emplace();
    session->parser->header_limit(static_cast<std::uint32_t>(settings.max_header_bytes));
    session->parser->body_limit(0);
    session->stream.expires_after(settings.request_timeout);
    http::async_read(session->stream, session->buffer, *session->parser,
                     [self = weak_from_this(), session](error_code error, std::size_t) {
                       if (auto impl = self.lock()) impl->on_request(session, error);
                     });
  }

  void on_request(const std::shared_ptr<Session>& session, error_code error) {
    if (!session->listed) return;
    if (error == beast::error::timeout || error == http::error::end_of_stream ||
        error == asio::error::operation_aborted || error == asio::error::connection_reset ||
        error == asio::error::eof) {
      return close(session);
    }
    if (error) return answer(session, http::status::bad_request, "bad request\n", false);
    const auto& request = session->parser->get();
    const bool head = request.method() == http::verb::head;
    std::string_view target = request.target();
    target = target.substr(0, target.find('?'));
    if (target != "/metrics" && target != "/healthz") {
      return answer(session, http::status::not_found, "not found: try /metrics or /healthz\n",
                    head);
    }
    if (request.method() != http::verb::get && !head) {
      session->response.set(http::field::allow, "GET, HEAD");
      return answer(session, http::status::method_not_allowed, "only GET and HEAD\n", head);
    }
    try {
      if (target == "/metrics") {
        session->response.set(http::field::content_type,
                              "text/plain; version=0.0.4; charset=utf-8");
        return answer(session, http::status::ok, sources.metrics(), head);
      }
      Health health = sources.health();
      return answer(session, health.healthy ? http::status::ok : http::status::service_unavailable,
                    health.body + "\n", head);
    } catch (const std::exception&) {
      return answer(session, http::status::internal_server_error, "internal error\n", head);
    }
  }

  void answer(const std::shared_ptr<Session>& session, http::status status, std::string body,
              bool head) {
    http::response<http::string_body>& response = session->response;
    response.version(11);
    response.result(status);
    response.keep_alive(false);
    if (response.find(http::field::content_type) == response.end()) {
      response.set(http::field::content_type, "text/plain; charset=utf-8");
    }
    response.content_length(body.size());
    if (!head) response.body() = std::move(body);
    session->stream.expires_after(settings.request_timeout);
    http::async_write(session->stream, response,
                      [self = weak_from_this(), session](error_code, std::size_t) {
                        if (auto impl = self.lock()) impl->close(session);
                      });
  }

  void close(std::shared_ptr<Session> session) {
    if (!session->listed) return;
    session->listed = false;
    sessions.erase(session->place);
    error_code ignored;
    session->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    session->stream.socket().close(ignored);
  }

  void stop() {
    error_code ignored;
    acceptor.close(ignored);
    retry.cancel();
    while (!sessions.empty()) close(sessions.front());
  }

  MetricsServerSettings settings;
  MetricsSources sources;
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  std::list<std::shared_ptr<Session>> sessions;  // oldest first
};

Expected<std::unique_ptr<MetricsServer>> MetricsServer::start(asio::io_context& io,
                                                              MetricsServerSettings settings,
                                                              MetricsSources sources) {
  auto impl = std::make_shared<Impl>(io, std::move(settings), std::move(sources));
  GANGRUN_TRY(impl->listen());
  impl->accept();
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() { impl_->stop(); }

std::string MetricsServer::endpoint() const {
  error_code ignored;
  return endpoint_text(impl_->acceptor.local_endpoint(ignored));
}

}  // namespace gangrun::observe
