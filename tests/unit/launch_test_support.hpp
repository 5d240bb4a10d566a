// Helpers shared by the launch tests: the Options of a plain job.
#pragma once

#include "config/options.hpp"

#include <string>
#include <utility>
#include <vector>

namespace gangrun::launch::test {

// nproc workers per node running program (no devices, no other option).
inline config::Options job(int nproc, std::vector<std::string> program = {"/bin/true"}) {
  config::Options options;
  options.nproc_per_node = config::ProcCount{config::ProcCount::Kind::number, nproc};
  options.program_and_args = std::move(program);
  return options;
}

}  // namespace gangrun::launch::test
