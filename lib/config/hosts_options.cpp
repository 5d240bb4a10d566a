// The options of hostfiles and starting gangrun on other hosts, as rows of the option table.
#include "config/option_table.hpp"

namespace gangrun::config {

std::vector<OptionSpec> hosts_option_specs() { return {}; }

}  // namespace gangrun::config
