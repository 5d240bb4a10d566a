// libFuzzer target for slurm::expand_hostlist. Any input must return, not
// crash; a success names at most k_max_hosts hosts, none empty or holding a
// separator; and an input without '[', ']' or '{' always succeeds and gives
// exactly its words, split at separators. Any broken invariant traps.
#include "slurm/hostlist.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr std::string_view k_separators = ", \t\n";

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = text.find_first_not_of(k_separators, at)) != std::string_view::npos) {
    std::size_t end = text.find_first_of(k_separators, at);
    out.emplace_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto hosts = gangrun::slurm::expand_hostlist(text);
  if (text.find_first_of("[]{") == std::string_view::npos) {
    check(hosts.has_value() && *hosts == words(text));
    return 0;
  }
  if (!hosts) {
    check(hosts.error().code() == gangrun::ErrorCode::usage && !hosts.error().message().empty());
    return 0;
  }
  check(hosts->size() <= gangrun::slurm::k_max_hosts);
  for (const std::string& host : *hosts) {
    check(!host.empty() && host.find_first_of(k_separators) == std::string::npos);
  }
  return 0;
}
