// Wording shared by the visibility checks' messages.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gangrun::accel {

// Positions in the node's unfiltered GPU list: "no GPU", "only GPU 2",
// "GPUs 0, 2 and 3" (in the order given).
std::string describe_gpu_positions(const std::vector<std::size_t>& positions);

}  // namespace gangrun::accel
