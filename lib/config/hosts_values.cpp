#include "config/hosts_values.hpp"

namespace gangrun::config {

Expected<void> type_hosts_values(const LayeredValues& /*values*/, Options& /*options*/) {
  return {};
}

}  // namespace gangrun::config
