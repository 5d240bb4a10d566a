// Where a worker is: every thread's stack, as the stack tool (py-spy) saw it,
// or the reason none could be read. py-spy was chosen over pystack for reading
// another process's Python stack: one binary wheel for every Python from 2.7
// to 3.13 (pystack is an extension built per interpreter), JSON output
// (`py-spy dump --json`), about 20 ms per process against pystack's 300 ms,
// native frames on request, MIT licence; both pause the process while they
// read it and need ptrace permission over it.
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::doctor {

struct Frame {
  std::string function;  // "load_batch", "DistributedDataParallel.forward"
  std::string file;      // as the tool shortens it: "train.py", "torch/nn/parallel/distributed.py"
  int line = 0;          // 0 when unknown (a native frame)
  bool operator==(const Frame&) const = default;
};

struct ThreadStack {
  std::string name;           // "MainThread"
  long os_thread_id = 0;      // the kernel's thread id; the main thread's is the pid
  bool active = false;        // running (or waiting for the GIL), not idle in a blocking call
  std::vector<Frame> frames;  // innermost first
  bool operator==(const ThreadStack&) const = default;
};

// The threads of one process in the tool's order, the main thread first when
// there is one. A process that is not Python, or that the tool cannot read,
// is an error naming why.
Expected<std::vector<ThreadStack>> parse_py_spy_json(std::string_view json);

// The main thread of threads (the one whose id is pid, else the one named
// MainThread, else the first); null when there are none.
const ThreadStack* main_thread(const std::vector<ThreadStack>& threads, long pid);

}  // namespace gangrun::doctor
