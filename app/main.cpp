#include "commands/entry.hpp"
#include "launch/probe_mode.hpp"

int main(int argc, char** argv) {
  // gangrun re-executed to probe a device (launch/probe_runner.hpp): before
  // options, logging or anything else.
  if (gangrun::launch::is_probe_mode(argc, argv)) gangrun::launch::run_probe_mode(argc, argv);
  return gangrun::main(argc, argv);
}
