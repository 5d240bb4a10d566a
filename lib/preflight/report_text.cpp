#include "preflight/report_text.hpp"

#include "preflight/json_fields.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gangrun::preflight {

using nlohmann::json;

namespace {

// Every text in the table is printable (strings::printable): the facts come
// from the job's store, which whoever reaches its port can write to, and a
// host name or an error text must not move the terminal's cursor or retitle
// its window.
std::string value_or_dash(const json& object, const Field& member) {
  const json& value = field(object, member);
  if (value.is_null()) return "-";
  return strings::printable(value.is_string() ? value.get<std::string>() : value.dump());
}

// "node 0 (host-a): Python 3.11.2, torch 1.13.1, CUDA -, 4 ranks"
std::vector<std::string> node_lines(const json& facts) {
  std::vector<std::string> lines;
  const json& ranks = field(facts, fact::result::ranks);
  for (const json& rank : ranks) {
    if (rank.is_null() || value_of(rank, fact::rank::local_rank, -1) != 0) continue;
    int node_rank = value_of(rank, fact::rank::node_rank, 0);
    auto on_node = std::count_if(ranks.begin(), ranks.end(), [&](const json& other) {
      return !other.is_null() && value_of(other, fact::rank::node_rank, -1) == node_rank;
    });
    const json& torch = field(rank, fact::rank::torch);
    lines.push_back(
        fmt::format("node {} ({}): Python {}, torch {}, CUDA {}, {} rank{}", node_rank,
                    strings::printable(value_of(rank, fact::rank::host, std::string("?"))),
                    value_or_dash(field(rank, fact::rank::python), fact::python::version),
                    has(torch, fact::torch::error) ? std::string("(cannot import)")
                                                   : value_or_dash(torch, fact::torch::version),
                    value_or_dash(torch, fact::torch::cuda), on_node, on_node == 1 ? "" : "s"));
  }
  return lines;
}

}  // namespace

std::string checks_table(const json& facts, const std::vector<Check>& judged) {
  std::vector<Check> checks = judged;
  for (Check& check : checks) {
    for (std::string* text : {&check.name, &check.where, &check.detail, &check.fix}) {
      *text = strings::printable(*text);
    }
  }
  std::string out;
  for (const std::string& line : node_lines(facts)) out += line + "\n";
  std::size_t name_width = 5;
  std::size_t where_width = 5;
  for (const Check& check : checks) {
    name_width = std::max(name_width, check.name.size());
    where_width = std::max(where_width, check.where.size());
  }
  out += "\n";
  out += fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", "CHECK", name_width, "WHERE", where_width,
                     "RESULT", "DETAIL");
  for (const Check& check : checks) {
    out += fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", check.name, name_width, check.where,
                       where_width, to_string(check.verdict), check.detail);
    if (!check.fix.empty()) {
      out += fmt::format("{:<{}}  fix: {}\n", "", name_width + where_width + 13, check.fix);
    }
  }
  auto count = [&](Verdict verdict) {
    return std::count_if(checks.begin(), checks.end(),
                         [&](const Check& check) { return check.verdict == verdict; });
  };
  out +=
      fmt::format("\npreflight {}: {} ok, {} warning{}, {} failed\n",
                  any_failed(checks) ? "FAILED" : "passed", count(Verdict::pass),
                  count(Verdict::warn), count(Verdict::warn) == 1 ? "" : "s", count(Verdict::fail));
  return out;
}

json checks_json(const json& facts, const std::vector<Check>& checks) {
  json rows = json::array();
  for (const Check& check : checks) {
    rows.push_back({{"check", check.name},
                    {"where", check.where},
                    {"result", to_string(check.verdict)},
                    {"detail", check.detail},
                    {"fix", check.fix}});
  }
  return {{"passed", !any_failed(checks)}, {"checks", rows}, {"facts", facts}};
}

}  // namespace gangrun::preflight
