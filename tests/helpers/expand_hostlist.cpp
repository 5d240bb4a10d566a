// expand_hostlist: slurm::expand_hostlist from the command line, for the
// integration test that compares it with `scontrol show hostnames`.
//
//   expand_hostlist < EXPRESSIONS
//
// Reads one expression per line (so none holds a newline) and writes one line
// for each: its hosts separated by single spaces (nothing for an empty list),
// or "error: " and the error's message.
#include "slurm/hostlist.hpp"

#include <iostream>
#include <string>

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    auto hosts = gangrun::slurm::expand_hostlist(line);
    if (!hosts) {
      std::cout << "error: " << hosts.error().describe() << '\n';
      continue;
    }
    for (std::size_t i = 0; i < hosts->size(); ++i) std::cout << (i ? " " : "") << (*hosts)[i];
    std::cout << '\n';
  }
  return std::cout.good() ? 0 : 1;
}
