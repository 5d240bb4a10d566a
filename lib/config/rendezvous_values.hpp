// Text -> typed values of the rendezvous options (--nnodes, --rdzv_backend,
// --rdzv_endpoint, --rdzv_conf), in torchrun's spellings. Like
// option_values.hpp, each returns an ErrorCode::usage error whose message
// says what is wrong with the text; the caller prefixes where it came from.
// Checks that involve two options (a range needs c10d, c10d needs an
// endpoint) are build_options.cpp's.
#pragma once

#include "config/options.hpp"
#include "util/error.hpp"

#include <string_view>

namespace gangrun::config {

// --nnodes as the c10d backend reads it.
struct NodeRange {
  int min = 1;
  int max = 1;
  bool operator==(const NodeRange&) const = default;
};

// "N" (min = max = N) or "MIN:MAX" with 1 <= MIN <= MAX.
Expected<NodeRange> parse_node_range(std::string_view text);

// --nnodes for the static backend: "N" or "N:N". A range with MIN < MAX is
// refused with a hint that it needs --rdzv_backend c10d.
Expected<int> parse_nnodes(std::string_view text);

// A name of rendezvous_backend.hpp's table, in any case. torchrun's etcd and
// etcd-v2 are refused with a pointer to c10d.
Expected<RendezvousBackend> parse_rdzv_backend(std::string_view text);

// torchrun's default port of a c10d endpoint given without one.
inline constexpr int k_default_rdzv_port = 29400;

// HOST[:PORT]: a host name or IPv4 address, or an IPv6 address in brackets
// ("[::1]:29400", "[fe80::1]"); the brackets are not part of Endpoint::host.
// PORT is 1..65535, k_default_rdzv_port when absent.
Expected<Endpoint> parse_rdzv_endpoint(std::string_view text);

// "key=value,key=value" over RendezvousConf's defaults. Keys: join_timeout
// (alias timeout), last_call_timeout, close_timeout, read_timeout (seconds,
// as parse_non_negative_seconds), is_host (true/false/yes/no/1/0, any case),
// keep_alive_interval (seconds > 0), keep_alive_max_attempt (integer >= 1).
// Empty items are skipped, as torchrun does ("a=1,"); an item without '=',
// an empty value, an unknown key or a key given twice is an error.
Expected<RendezvousConf> parse_rdzv_conf(std::string_view text);

}  // namespace gangrun::config
