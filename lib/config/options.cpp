#include "config/options.hpp"

namespace gangrun::config {

const char* to_string(Source source) {
  switch (source) {
    case Source::default_value:
      return "default";
    case Source::config_file:
      return "config file";
    case Source::pet_env:
      return "PET_ environment";
    case Source::gangrun_env:
      return "GANGRUN_ environment";
    case Source::command_line:
      return "command line";
  }
  return "unknown";
}

}  // namespace gangrun::config
