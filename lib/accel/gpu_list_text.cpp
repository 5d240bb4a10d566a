#include "accel/gpu_list_text.hpp"

namespace gangrun::accel {

std::string describe_gpu_positions(const std::vector<std::size_t>& positions) {
  if (positions.empty()) return "no GPU";
  if (positions.size() == 1) return "only GPU " + std::to_string(positions.front());
  std::string text = "GPUs ";
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (i > 0) text += i + 1 == positions.size() ? " and " : ", ";
    text += std::to_string(positions[i]);
  }
  return text;
}

}  // namespace gangrun::accel
