#include "rendezvous/keys.hpp"

namespace gangrun::rendezvous::keys {

namespace {

// "<round>/<agent>" after a kind's "failed/", "result/" or "ask/": the
// round's digits (at least one) and everything after the slash.
void read_round_and_agent(std::string_view rest, ParsedKey& parsed) {
  std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return;
  std::uint64_t round = 0;
  for (char digit : rest.substr(0, slash)) {
    if (digit < '0' || digit > '9') return;
    round = round * 10 + static_cast<std::uint64_t>(digit - '0');
  }
  parsed.round = round;
  parsed.agent = std::string(rest.substr(slash + 1));
}

// Removes "<kind>/" from the front of rest when it is there.
bool take_kind(std::string_view& rest, std::string_view kind) {
  if (!rest.starts_with(kind) || rest.size() == kind.size() || rest[kind.size()] != '/') {
    return false;
  }
  rest.remove_prefix(kind.size() + 1);
  return true;
}

ParsedKey parse_doctor(std::string_view rest) {
  ParsedKey parsed{.kind = Kind::other_doctor};
  if (!take_kind(rest, "ask")) return parsed;
  parsed.kind = Kind::doctor_ask;
  read_round_and_agent(rest, parsed);
  return parsed;
}

ParsedKey parse_rendezvous(std::string_view rest) {
  ParsedKey parsed{.kind = Kind::other_rdzv};
  if (take_kind(rest, "join")) {
    parsed.kind = Kind::join;
    parsed.agent = std::string(rest);
  } else if (take_kind(rest, "conn")) {
    parsed.kind = Kind::connection;
    std::size_t slash = rest.find('/');
    parsed.agent = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) parsed.token = std::string(rest.substr(slash + 1));
  } else if (take_kind(rest, "alive")) {
    parsed.kind = Kind::alive;
    parsed.agent = std::string(rest);
  } else if (take_kind(rest, "failed")) {
    parsed.kind = Kind::failed;
    read_round_and_agent(rest, parsed);
  } else if (take_kind(rest, "result")) {
    parsed.kind = Kind::result;
    read_round_and_agent(rest, parsed);
  }
  return parsed;
}

}  // namespace

ParsedKey parse(std::string_view key) {
  if (key.starts_with(k_doctor_prefix)) return parse_doctor(key.substr(k_doctor_prefix.size()));
  if (key.starts_with(k_prefix)) return parse_rendezvous(key.substr(k_prefix.size()));
  return ParsedKey{};
}

}  // namespace gangrun::rendezvous::keys
