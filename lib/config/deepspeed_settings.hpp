// What the deepspeed launcher's own flags asked for, typed (Options::deepspeed).
#pragma once

namespace gangrun::config {

struct DeepspeedSettings {};

}  // namespace gangrun::config
