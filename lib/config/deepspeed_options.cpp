// The options of the deepspeed launcher's own flags, as rows of the option table.
#include "config/option_table.hpp"

namespace gangrun::config {

std::vector<OptionSpec> deepspeed_option_specs() { return {}; }

}  // namespace gangrun::config
