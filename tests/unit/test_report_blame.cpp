#include "report/blame.hpp"

#include <catch2/catch.hpp>

using namespace gangrun::report;
using State = RankFate::State;
using std::chrono::seconds;

namespace {

const std::chrono::system_clock::time_point t0{};

RankFate fate(int rank, State state, int at_second = 0) {
  return RankFate{.rank = rank, .state = state, .ended_at = t0 + seconds(at_second)};
}

}  // namespace

TEST_CASE("blame: the one rank still running when the others failed is the one they waited for",
          "[report][blame]") {
  auto blame = find_waited_for({fate(0, State::failed, 10), fate(1, State::failed, 10),
                                fate(2, State::running), fate(3, State::failed, 11)});
  REQUIRE(blame);
  CHECK(blame->waited_for == std::vector<int>{2});
  CHECK(blame->waiting == std::vector<int>{0, 1, 3});
  CHECK(blame->never_exited);
  CHECK(describe(*blame) == "rank 2 never reached the collective; ranks 0, 1, 3 timed out waiting");
  CHECK(describe(*blame, "node 1 (vm, 10.0.0.2)") ==
        "rank 2 on node 1 (vm, 10.0.0.2) never reached the collective; ranks 0, 1, 3 timed out "
        "waiting");
}

TEST_CASE("blame: no rank is named without plain evidence", "[report][blame]") {
  SECTION("one failure: it is the root cause itself") {
    CHECK_FALSE(find_waited_for(
        {fate(0, State::failed), fate(1, State::running), fate(2, State::running)}));
  }
  SECTION("as many running as failed") {
    CHECK_FALSE(find_waited_for({fate(0, State::failed), fate(1, State::failed),
                                 fate(2, State::running), fate(3, State::running)}));
  }
  SECTION("everyone failed") {
    CHECK_FALSE(find_waited_for({fate(0, State::failed), fate(1, State::failed)}));
  }
  SECTION("a rank that exited 0 after the first failure left nobody waiting") {
    CHECK_FALSE(find_waited_for(
        {fate(0, State::failed, 5), fate(1, State::failed, 6), fate(2, State::succeeded, 5)}));
  }
  SECTION("nothing at all") { CHECK_FALSE(find_waited_for({})); }
}

TEST_CASE("blame: a rank that exited before anyone failed left the others waiting",
          "[report][blame]") {
  auto blame = find_waited_for({fate(0, State::failed, 9), fate(1, State::failed, 9),
                                fate(2, State::succeeded, 4), fate(3, State::failed, 10)});
  REQUIRE(blame);
  CHECK(blame->waited_for == std::vector<int>{2});
  CHECK_FALSE(blame->never_exited);
  CHECK(describe(*blame) == "rank 2 exited first (with code 0); ranks 0, 1, 3 failed after it");
}

TEST_CASE("blame: rank lists fold runs of three or more", "[report][blame]") {
  CHECK(rank_list({4}) == "rank 4");
  CHECK(rank_list({0, 1, 3}) == "ranks 0, 1, 3");
  CHECK(rank_list({0, 1, 2, 3, 4, 5, 7}) == "ranks 0-5, 7");
  CHECK(rank_list({1, 2, 3, 5, 6, 8, 9, 10}) == "ranks 1-3, 5, 6, 8-10");
}
