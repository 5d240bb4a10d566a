// The node agent's HTTP endpoint (--metrics-addr): GET or HEAD of /metrics
// (Prometheus' text format, from metrics_text.hpp) and /healthz (a liveness
// probe), on Boost.Beast, on the agent's own io_context.
//
// It must never cost the agent its loop, whoever connects:
// - at most max_connections at once; a newcomer beyond that closes the
//   oldest connection (the one idle longest: a slowloris' socket, never a
//   scrape in progress for long), so a flood of idle sockets cannot lock
//   Prometheus out;
// - a request's header is at most max_header_bytes and has no body, and it
//   must arrive whole within request_timeout (a deadline for the request,
//   not per byte, so a byte every second does not keep a socket);
// - one request per connection, answered with Connection: close, and the
//   answer too must be taken within request_timeout;
// - any other method is 405, any other path 404, bytes that are not HTTP
//   400; each closes its connection.
// The text comes from the callbacks, run on the loop per request; they are
// cheap (a snapshot of the agent's own state and a few /proc reads).
#pragma once

#include "util/error.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace gangrun::observe {

struct MetricsServerSettings {
  std::string host = "127.0.0.1";  // an address literal or a name
  int port = 0;                    // 0: the kernel picks one
  std::size_t max_connections = 16;
  std::size_t max_header_bytes = 8192;
  std::chrono::milliseconds request_timeout{5000};
};

struct Health {
  bool healthy = true;  // 200, else 503
  std::string body;     // one line: "ok", or what is wrong
};

struct MetricsSources {
  std::function<std::string()> metrics;  // the body of /metrics
  std::function<Health()> health;        // /healthz
};

class MetricsServer {
 public:
  // Binds and listens; an error (ErrorCode::usage for an address that is
  // not this host's or not an address, ErrorCode::network otherwise) names
  // --metrics-addr, the address and the reason.
  static Expected<std::unique_ptr<MetricsServer>> start(boost::asio::io_context& io,
                                                        MetricsServerSettings settings,
                                                        MetricsSources sources);
  ~MetricsServer();  // closes the listener and every connection
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // "127.0.0.1:9400", "[::1]:9400": the address bound.
  std::string endpoint() const;

 private:
  struct Impl;
  explicit MetricsServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace gangrun::observe
