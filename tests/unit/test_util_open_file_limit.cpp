// The one owner of gangrun's open-file limit: raised to the hard limit, the
// user's own kept for children. The test puts the process's limit back.
#include "util/open_file_limit.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>

namespace limit = gangrun::open_file_limit;

TEST_CASE("open-file limit: raised to the hard one, the user's own kept", "[util]") {
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  if (before.rlim_max < 64) {
    WARN("the hard open-file limit is too low to lower the soft one; nothing checked");
    return;
  }
  rlimit lowered = before;
  lowered.rlim_cur = before.rlim_max / 2;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);

  limit::use_hard_limit();
  rlimit now{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &now) == 0);
  CHECK(now.rlim_cur == before.rlim_max);
  REQUIRE(limit::users_limit() != nullptr);
  // The first raise in this process is the one kept (another test may have
  // raised it first), and it was below the hard limit.
  CHECK(limit::users_limit()->rlim_cur < before.rlim_max);

  // Nothing left to raise: the user's limit stays the first one kept.
  rlimit kept = *limit::users_limit();
  limit::use_hard_limit();
  CHECK(limit::users_limit()->rlim_cur == kept.rlim_cur);
  ::setrlimit(RLIMIT_NOFILE, &before);
}
