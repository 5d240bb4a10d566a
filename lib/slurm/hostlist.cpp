#include "slurm/hostlist.hpp"

#include "util/strings.hpp"

#include <charconv>
#include <cstdint>
#include <numeric>
#include <optional>
#include <system_error>

namespace gangrun::slurm {
namespace {

// One bracket group, flattened: its numbers already written out, in order.
using Group = std::vector<std::string>;

// One host pattern between separators: texts[0] groups[0] texts[1] ...
// groups[n-1] texts[n]. Without groups it is one plain host name.
struct Item {
  std::vector<std::string> texts{""};
  std::vector<Group> groups;
};

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

// The caller's error, saying which expression it is about.
tl::unexpected<Error> invalid(std::string_view expression, std::string_view what) {
  return fail_usage("invalid hostlist " + strings::quoted(strings::printable(expression)) + ": " +
                    std::string(what));
}

tl::unexpected<Error> too_many_hosts(std::string_view expression) {
  return invalid(expression, "it names more than " + std::to_string(k_max_hosts) + " hosts");
}

std::optional<std::uint64_t> parse_bound(std::string_view digits) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// Appends the numbers of "low" or "low-high" to group, each as wide as the
// low bound was written ("08-11": 08 09 10 11). Slurm reads "5-" as "5".
Expected<void> add_range(std::string_view expression, std::string_view range, Group& group) {
  if (range.empty()) return invalid(expression, "empty range in brackets");
  std::size_t dash = range.find('-');
  std::string_view low_text = range.substr(0, dash);
  std::string_view high_text = dash == std::string_view::npos ? low_text : range.substr(dash + 1);
  if (high_text.empty()) high_text = low_text;
  auto low = parse_bound(low_text);
  auto high = parse_bound(high_text);
  if (!low || !high) {
    return invalid(expression, "range " + strings::printable(range) +
                                   " is not a number or two numbers joined by '-' "
                                   "(at most 20 digits each, below 2^64)");
  }
  if (*low > *high)
    return invalid(expression, "range " + strings::printable(range) + " runs backwards");
  if (*high - *low >= k_max_hosts_per_range) {
    return invalid(expression, "range " + strings::printable(range) + " has more than " +
                                   std::to_string(k_max_hosts_per_range) + " hosts");
  }
  for (std::uint64_t number = *low;; ++number) {
    std::string text = std::to_string(number);
    if (text.size() < low_text.size()) text.insert(0, low_text.size() - text.size(), '0');
    group.push_back(std::move(text));
    if (number == *high) break;
  }
  return {};
}

// The hosts one item stands for; many only through its groups, which
// parse_item bounded before they were written out.
std::size_t host_count(const Item& item) {
  return std::accumulate(
      item.groups.begin(), item.groups.end(), std::size_t{1},
      [](std::size_t count, const Group& group) { return count * group.size(); });
}

// Reads one item starting at `at` (not a separator) up to the next separator
// outside brackets, and moves `at` past it. An item of more than k_max_hosts
// fails before its groups take more memory than about that many numbers.
Expected<Item> parse_item(std::string_view expression, std::size_t& at) {
  Item item;
  std::size_t hosts = 1;
  while (at < expression.size() && !is_separator(expression[at])) {
    char c = expression[at];
    if (c == '{') {
      return invalid(expression,
                     "'{' starts a hostlist function (such as feature{...}), "
                     "which only the Slurm controller can expand");
    }
    if (c == ']') return invalid(expression, "']' without '['");
    if (c != '[') {
      item.texts.back() += c;
      ++at;
      continue;
    }
    std::size_t close = expression.find_first_of("[]", at + 1);
    if (close == std::string_view::npos || expression[close] == '[') {
      return invalid(expression, "'[' without ']'");
    }
    Group group;
    std::string_view ranges = expression.substr(at + 1, close - at - 1);
    for (std::size_t start = 0;;) {
      std::size_t comma = ranges.find(',', start);
      GANGRUN_TRY(add_range(expression, ranges.substr(start, comma - start), group));
      if (group.size() > k_max_hosts) break;  // the check below fails
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (group.size() > k_max_hosts / hosts) return too_many_hosts(expression);
    hosts *= group.size();
    item.groups.push_back(std::move(group));
    item.texts.emplace_back();
    at = close + 1;
  }
  // Text after the last group is a suffix (Slurm 23.02.5 and later; 22.05
  // rejects "n[1-3]-ib"), kept: the job variables of newer clusters use it.
  return item;
}

// Writes out the hosts of item. The last group varies fastest, then the
// others from the first on: Slurm takes the last group as the item's range and
// expands the text before it recursively, each time looping over that text's
// own last group outside the expansion of what precedes it.
void expand_item(const Item& item, std::vector<std::string>& hosts) {
  std::size_t groups = item.groups.size();
  std::vector<std::size_t> significance;  // group indices, fastest first
  if (groups > 0) significance.push_back(groups - 1);
  for (std::size_t g = 0; g + 1 < groups; ++g) significance.push_back(g);

  std::vector<std::size_t> position(groups, 0);
  for (;;) {
    std::string host = item.texts[0];
    for (std::size_t g = 0; g < groups; ++g)
      host += item.groups[g][position[g]] + item.texts[g + 1];
    hosts.push_back(std::move(host));

    auto carry = significance.begin();
    for (; carry != significance.end(); ++carry) {
      if (++position[*carry] < item.groups[*carry].size()) break;
      position[*carry] = 0;
    }
    if (carry == significance.end()) return;
  }
}

}  // namespace

Expected<std::vector<std::string>> expand_hostlist(std::string_view expression) {
  std::vector<Item> items;
  std::size_t total = 0;
  for (std::size_t at = 0; at < expression.size();) {
    if (is_separator(expression[at])) {
      ++at;
      continue;
    }
    GANGRUN_TRY_ASSIGN(item, parse_item(expression, at));
    total += host_count(*item);
    if (total > k_max_hosts) return too_many_hosts(expression);
    items.push_back(std::move(*item));
  }
  std::vector<std::string> hosts;
  hosts.reserve(total);
  for (const Item& item : items) expand_item(item, hosts);
  return hosts;
}

}  // namespace gangrun::slurm
