// Writes gangrun(1) in roff: to the file named by the only argument, else to
// standard output. The build runs it to produce gangrun.1 (tools/CMakeLists.txt).
#include "cli_docs/man_page.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#ifndef GANGRUN_VERSION
#define GANGRUN_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  if (argc > 2) {
    std::cerr << "usage: gen_man [OUTPUT_FILE]\n";
    return 2;
  }
  const std::string page = gangrun::cli_docs::man_page(GANGRUN_VERSION);
  if (argc == 1) {
    std::cout << page;
    return std::cout.flush() ? 0 : 1;
  }
  std::ofstream file(argv[1], std::ios::binary | std::ios::trunc);
  file << page;
  file.close();
  if (!file) {
    std::cerr << "gen_man: cannot write " << argv[1] << "\n";
    std::remove(argv[1]);  // no half-written page for the build to take as done
    return 1;
  }
  return 0;
}
