#include "config/accelerate_values.hpp"

namespace gangrun::config {

Expected<void> type_accelerate_values(const LayeredValues& /*values*/, Options& /*options*/) {
  return {};
}

}  // namespace gangrun::config
