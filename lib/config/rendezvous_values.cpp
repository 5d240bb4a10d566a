#include "config/rendezvous_values.hpp"

#include "config/option_values.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gangrun::config {

namespace {

constexpr int k_int_max = std::numeric_limits<int>::max();

// A whole-string integer in [low, high]; nullopt otherwise.
std::optional<int> int_in_range(std::string_view text, int low, int high) {
  std::optional<std::int64_t> value = strings::parse_int(strings::trim(text));
  if (!value || *value < low || *value > high) return std::nullopt;
  return static_cast<int>(*value);
}

const char* const k_endpoint_form = "expected HOST[:PORT], e.g. node0:29400 or [::1]:29400";

tl::unexpected<Error> not_an_endpoint(std::string_view text, const std::string& why) {
  return fail_usage(strings::quoted(text) + " is not a rendezvous endpoint: " + why + " (" +
                    k_endpoint_form + ")");
}

bool is_host_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

// Inside brackets: hex groups, colons, an embedded IPv4 address's dots, and
// a zone after '%' ("fe80::1%eth0").
bool is_ipv6_char(char c) { return is_host_name_char(c) || c == ':' || c == '%'; }

// Splits "[v6]:port", "[v6]", "host:port" or "host" into host and port text
// (nullopt: no port given).
struct EndpointParts {
  std::string_view host;
  std::optional<std::string_view> port;
};

Expected<EndpointParts> split_endpoint(std::string_view text) {
  if (text.starts_with('[')) {
    std::size_t close = text.find(']');
    if (close == std::string_view::npos) return not_an_endpoint(text, "no closing ']'");
    std::string_view host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (host.find(':') == std::string_view::npos ||
        !std::all_of(host.begin(), host.end(), is_ipv6_char)) {
      return not_an_endpoint(text, "brackets hold an IPv6 address");
    }
    if (rest.empty()) return EndpointParts{host, std::nullopt};
    if (!rest.starts_with(':')) return not_an_endpoint(text, "unexpected text after ']'");
    return EndpointParts{host, rest.substr(1)};
  }
  std::size_t colon = text.find(':');
  if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
    return not_an_endpoint(text, "an IPv6 address goes in brackets");
  }
  std::string_view host = text.substr(0, colon);
  if (host.empty() || !std::all_of(host.begin(), host.end(), is_host_name_char)) {
    return not_an_endpoint(text, "a host is a name or an address");
  }
  if (colon == std::string_view::npos) return EndpointParts{host, std::nullopt};
  return EndpointParts{host, text.substr(colon + 1)};
}

// One --rdzv_conf key and how its value is typed into RendezvousConf.
struct ConfKey {
  std::string_view name;
  std::string_view canonical;  // "timeout" sets join_timeout
  std::function<Expected<void>(std::string_view, RendezvousConf&)> set;
};

Expected<void> set_seconds(std::string_view text, double& field) {
  GANGRUN_TRY_ASSIGN(seconds, parse_non_negative_seconds(text));
  field = *seconds;
  return {};
}

Expected<bool> parse_is_host(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (word == "true" || word == "yes" || word == "1") return true;
  if (word == "false" || word == "no" || word == "0") return false;
  return fail_usage(strings::quoted(text) + " is not a boolean (expected true/false, yes/no, 1/0)");
}

const std::vector<ConfKey>& conf_keys() {
  static const std::vector<ConfKey> keys = {
      {"join_timeout", "join_timeout",
       [](std::string_view t, RendezvousConf& c) { return set_seconds(t, c.join_timeout); }},
      {"timeout", "join_timeout",
       [](std::string_view t, RendezvousConf& c) { return set_seconds(t, c.join_timeout); }},
      {"last_call_timeout", "last_call_timeout",
       [](std::string_view t, RendezvousConf& c) { return set_seconds(t, c.last_call_timeout); }},
      {"close_timeout", "close_timeout",
       [](std::string_view t, RendezvousConf& c) { return set_seconds(t, c.close_timeout); }},
      {"read_timeout", "read_timeout",
       [](std::string_view t, RendezvousConf& c) { return set_seconds(t, c.read_timeout); }},
      {"is_host", "is_host",
       [](std::string_view t, RendezvousConf& c) -> Expected<void> {
         GANGRUN_TRY_ASSIGN(is_host, parse_is_host(t));
         c.is_host = *is_host;
         return {};
       }},
      {"keep_alive_interval", "keep_alive_interval",
       [](std::string_view t, RendezvousConf& c) -> Expected<void> {
         // 0 would probe without pause; the keep-alive needs a period.
         Expected<double> seconds = parse_non_negative_seconds(t);
         if (!seconds || *seconds <= 0) {
           return fail_usage(strings::quoted(t) + " is not a number of seconds above 0 and up to " +
                             std::to_string(static_cast<long>(k_max_seconds)));
         }
         c.keep_alive_interval = *seconds;
         return {};
       }},
      {"keep_alive_max_attempt", "keep_alive_max_attempt",
       [](std::string_view t, RendezvousConf& c) -> Expected<void> {
         GANGRUN_TRY_ASSIGN(attempts, parse_positive_int(t));
         c.keep_alive_max_attempt = *attempts;
         return {};
       }},
  };
  return keys;
}

std::string known_conf_keys() {
  std::vector<std::string> names;
  for (const ConfKey& key : conf_keys()) names.emplace_back(key.name);
  return strings::join(names, ", ");
}

}  // namespace

Expected<NodeRange> parse_node_range(std::string_view text) {
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    std::optional<int> count = int_in_range(text, 1, k_int_max);
    if (!count) {
      return fail_usage(strings::quoted(text) +
                        " is not a node count (expected N or MIN:MAX, N >= 1)");
    }
    return NodeRange{*count, *count};
  }
  std::optional<int> low = int_in_range(text.substr(0, colon), 1, k_int_max);
  std::optional<int> high = int_in_range(text.substr(colon + 1), 1, k_int_max);
  if (!low || !high) {
    return fail_usage(strings::quoted(text) +
                      " is not a node range (expected MIN:MAX with 1 <= MIN <= MAX)");
  }
  if (*low > *high) {
    return fail_usage("minimum " + std::to_string(*low) + " exceeds maximum " +
                      std::to_string(*high) + " in " + strings::quoted(text));
  }
  return NodeRange{*low, *high};
}

Expected<int> parse_nnodes(std::string_view text) {
  Expected<NodeRange> range = parse_node_range(text);
  if (!range && text.find(':') == std::string_view::npos) {
    return fail_usage(strings::quoted(text) + " is not a node count (expected N or N:N, N >= 1)");
  }
  if (!range) return pass_up(std::move(range));
  if (range->min < range->max) {
    return fail_usage(strings::quoted(text) +
                      " is an elastic range, which needs --rdzv_backend c10d and "
                      "--rdzv_endpoint HOST[:PORT]; with the static backend give a fixed node "
                      "count such as " +
                      std::to_string(range->max));
  }
  return range->max;
}

Expected<RendezvousBackend> parse_rdzv_backend(std::string_view text) {
  std::string word = strings::to_lower(strings::trim(text));
  if (std::optional<RendezvousBackend> backend = backend_named(word)) return *backend;
  if (word == "etcd" || word == "etcd-v2") {
    return fail_usage("rendezvous backend " + word +
                      " is not supported; use c10d (--rdzv_backend c10d --rdzv_endpoint "
                      "HOST:PORT)");
  }
  return fail_usage(strings::quoted(text) +
                    " is not a rendezvous backend (expected static or c10d)");
}

Expected<Endpoint> parse_rdzv_endpoint(std::string_view text) {
  std::string_view trimmed = strings::trim(text);
  if (trimmed.empty()) return not_an_endpoint(text, "it is empty");
  GANGRUN_TRY_ASSIGN(parts, split_endpoint(trimmed));
  Endpoint endpoint{.host = std::string(parts->host), .port = k_default_rdzv_port};
  if (parts->port) {
    std::optional<int> port = int_in_range(*parts->port, 1, 65535);
    if (!port || strings::trim(*parts->port) != *parts->port) {
      return not_an_endpoint(text, "the port is 1..65535");
    }
    endpoint.port = *port;
  }
  return endpoint;
}

Expected<RendezvousConf> parse_rdzv_conf(std::string_view text) {
  RendezvousConf conf;
  std::set<std::string_view> seen;  // canonical names
  for (const std::string& item : strings::split(text, ',')) {
    std::string_view entry = strings::trim(item);
    if (entry.empty()) continue;
    std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return fail_usage(strings::quoted(entry) + " in " + strings::quoted(text) +
                        " is not KEY=VALUE (e.g. join_timeout=900,is_host=false)");
    }
    std::string_view name = strings::trim(entry.substr(0, equals));
    std::string_view value = strings::trim(entry.substr(equals + 1));
    auto key = std::find_if(conf_keys().begin(), conf_keys().end(),
                            [&](const ConfKey& k) { return k.name == name; });
    if (key == conf_keys().end()) {
      return fail_usage(strings::quoted(name) + " in " + strings::quoted(text) +
                        " is not a rendezvous setting (known: " + known_conf_keys() + ")");
    }
    if (value.empty()) {
      return fail_usage(std::string(name) + " in " + strings::quoted(text) + " has no value");
    }
    if (!seen.insert(key->canonical).second) {
      return fail_usage(std::string(key->canonical) + " is set twice in " + strings::quoted(text));
    }
    Expected<void> set = key->set(value, conf);
    if (!set) {
      return fail_usage(std::string(name) + " in " + strings::quoted(text) + ": " +
                        set.error().message());
    }
  }
  return conf;
}

}  // namespace gangrun::config
