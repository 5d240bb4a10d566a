// The Catch2 runner of unit_tests. A test case that makes no assertion fails,
// as with `-w NoAssertions`: a test that cannot check anything here must say so
// through a ctest skip (tests/CMakeLists.txt) rather than pass.
//
// Tests that probe devices run this binary again in gangrun's hidden probe
// mode (probe/probe_mode.hpp), with any probe a test file registered.
#define CATCH_CONFIG_RUNNER
#include "probe/probe_mode.hpp"

#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  if (gangrun::probe::is_probe_mode(argc, argv)) gangrun::probe::run_probe_mode(argc, argv);
  Catch::Session session;
  session.configData().warnings = Catch::WarnAbout::NoAssertions;
  if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
  return session.run();
}
