#include "config/metrics_address.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>

namespace gangrun::config {
namespace {

tl::unexpected<Error> not_an_address(std::string_view text, const std::string& why) {
  return fail_usage("--metrics-addr " + strings::quoted(text) + ": " + why +
                    " (HOST:PORT, [IPV6]:PORT, :PORT or PORT; PORT 0 picks a free one; without a "
                    "host it is 127.0.0.1)");
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
}

}  // namespace

Expected<Endpoint> parse_metrics_address(std::string_view text) {
  std::string_view trimmed = strings::trim(text);
  if (trimmed.empty()) return not_an_address(text, "it is empty");
  std::string_view host;
  std::string_view port_text = trimmed;
  if (trimmed.starts_with('[')) {
    std::size_t close = trimmed.find(']');
    if (close == std::string_view::npos) return not_an_address(text, "no closing ']'");
    host = trimmed.substr(1, close - 1);
    if (host.empty() || !std::all_of(host.begin(), host.end(), is_ipv6_char)) {
      return not_an_address(text, "brackets hold an IPv6 address");
    }
    std::string_view rest = trimmed.substr(close + 1);
    if (!rest.starts_with(':')) return not_an_address(text, "a port must follow ']:'");
    port_text = rest.substr(1);
  } else if (std::size_t colon = trimmed.rfind(':'); colon != std::string_view::npos) {
    host = trimmed.substr(0, colon);
    port_text = trimmed.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return not_an_address(text, "an IPv6 address goes in brackets");
    }
    if (!std::all_of(host.begin(), host.end(), is_host_char)) {
      return not_an_address(text, "a host is a name or an address");
    }
  }
  std::optional<std::int64_t> port = strings::parse_int(port_text);
  if (!port || *port < 0 || *port > 65535) {
    return not_an_address(text, "the port is a number 0..65535");
  }
  return Endpoint{.host = host.empty() ? "127.0.0.1" : std::string(host),
                  .port = static_cast<int>(*port)};
}

}  // namespace gangrun::config
