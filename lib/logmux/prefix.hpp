// Line prefixes: torchrun's template variables, expanded once per worker.
#pragma once

#include <string>
#include <string_view>

namespace gangrun::logmux {

inline constexpr std::string_view k_default_prefix_template = "[rank${rank}]: ";

struct PrefixFields {
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  std::string role_name;
  std::string host;
};

// Replaces ${rank}, ${local_rank}, ${role_name}, ${node_rank}, ${host};
// any other ${...} is left as written.
std::string expand_prefix(std::string_view templ, const PrefixFields& fields);

// The prefix a console line gets: none when the line already begins with
// this very prefix, its trailing blanks aside; else prefix itself. Why:
// torch 2.x tags a rank's lines itself once the rank is known ("[rank1]:
// Traceback ..." from the excepthook init_process_group installs,
// "[rank1]:[W1128 ...] ..." from c10's logging), and the default prefix
// "[rank1]: " would say it twice. Only this worker's own prefix counts: a
// line tagged with another rank (or "[rank10]:" for rank 1) keeps ours, so
// nobody is misled about who printed it. A prefix that does not end in
// punctuation, blanks aside (a blank one, "${rank}"), is always given.
std::string_view prefix_for_line(std::string_view prefix, std::string_view line);

}  // namespace gangrun::logmux
