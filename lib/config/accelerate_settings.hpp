// What accelerate launch's own flags and config file asked for, typed (Options::accelerate).
#pragma once

namespace gangrun::config {

struct AccelerateSettings {};

}  // namespace gangrun::config
