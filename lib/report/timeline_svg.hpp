// The timeline of report.html as inline SVG: a time axis, a lane per rank
// under its node's heading, each attempt a bar from the rank's start to its
// end, coloured by how it ended, the root cause outlined, marks for hung,
// stopped and slow ranks, a tick at the rank's last output, and bands for a
// failure window and a hang. Every element a test or a reader looks for
// carries data-* attributes: data-node on a node's group, data-rank on a
// lane, data-root-cause, data-hung, data-stopped, data-straggler on the
// lanes they describe. Hovering shows the details (SVG <title>).
#pragma once

#include "report/timeline.hpp"

#include <string>

namespace gangrun::report {

std::string timeline_svg(const Timeline& timeline);

}  // namespace gangrun::report
