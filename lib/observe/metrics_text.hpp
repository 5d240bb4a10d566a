// A node's snapshot in Prometheus' text exposition format (version 0.0.4),
// as /metrics serves it. Every series is named gangrun_*, has HELP and TYPE
// lines, and is labelled run_id and node (rank and local_rank where it is
// per rank); run_id rather than job, which Prometheus sets to the scrape
// job's name. The series are listed in docs/metrics.md.
#pragma once

#include "observe/node_status.hpp"

#include <string>
#include <string_view>

namespace gangrun::observe {

std::string metrics_text(const NodeStatus& status);

// A label value as the format quotes it: backslash, double quote and line
// feed escaped (\\, \", \n); any other control byte becomes a space, so a
// host name with odd bytes cannot break a line.
std::string escaped_label_value(std::string_view value);

}  // namespace gangrun::observe
