// The options of accelerate launch's own flags and config file, as rows of the option table.
#include "config/option_table.hpp"

namespace gangrun::config {

std::vector<OptionSpec> accelerate_option_specs() { return {}; }

}  // namespace gangrun::config
