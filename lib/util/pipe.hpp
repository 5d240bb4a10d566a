// An anonymous pipe whose two ends close themselves.
#pragma once

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gangrun {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

// Both ends close-on-exec: a child gets one only through an explicit dup2.
Expected<Pipe> make_pipe();

// Sets O_NONBLOCK on a descriptor gangrun owns alone (never on an inherited
// stdout/stderr, whose open file description the shell shares).
Expected<void> set_non_blocking(int fd);

}  // namespace gangrun
