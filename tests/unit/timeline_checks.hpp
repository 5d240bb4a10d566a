// What the report page's tests ask of a timeline and a page's text.
#pragma once

#include "report/timeline.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace gangrun::test {

// The lane of rank; the test fails where there is none.
inline const report::Lane& lane_of(const report::Timeline& timeline, int rank) {
  auto found = std::find_if(timeline.lanes.begin(), timeline.lanes.end(),
                            [&](const report::Lane& lane) { return lane.rank == rank; });
  REQUIRE(found != timeline.lanes.end());
  return *found;
}

// How often what stands in text.
inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t found = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++found;
  }
  return found;
}

}  // namespace gangrun::test
