#include "config/deepspeed_values.hpp"

namespace gangrun::config {

Expected<void> type_deepspeed_values(const LayeredValues& /*values*/, Options& /*options*/) {
  return {};
}

}  // namespace gangrun::config
