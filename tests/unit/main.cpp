// The Catch2 runner of unit_tests. A test case that makes no assertion fails,
// as with `-w NoAssertions`: a test that cannot check anything here must say so
// through a ctest skip (tests/CMakeLists.txt) rather than pass.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  Catch::Session session;
  session.configData().warnings = Catch::WarnAbout::NoAssertions;
  if (const int status = session.applyCommandLine(argc, argv); status != 0) return status;
  return session.run();
}
