#include "logmux/tail_buffer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using gangrun::logmux::TailBuffer;
using Lines = std::vector<std::string>;

TEST_CASE("logmux::TailBuffer keeps the last lines without terminators", "[logmux]") {
  TailBuffer tail(3, 100);
  CHECK(tail.lines().empty());
  tail.push("one\n", true);
  tail.push("two\r\n", true);
  CHECK(tail.lines() == Lines{"one", "two"});
  tail.push("three\r", true);
  tail.push("four", true);
  tail.push("", true);
  CHECK(tail.lines() == Lines{"three", "four", ""});
  for (int i = 0; i < 1000; ++i) tail.push(std::to_string(i) + "\n", true);
  CHECK(tail.lines() == Lines{"997", "998", "999"});
}

TEST_CASE("logmux::TailBuffer cuts long lines at a character boundary", "[logmux]") {
  TailBuffer tail(5, 4);
  tail.push("abcdefgh\n", true);
  tail.push("abc\xC3\xA9z\n", true);            // "abcéz": the cut would fall inside 'é'
  tail.push("ab\xC3\xA9z\n", true);             // "abéz": 'é' ends exactly at the cut
  tail.push("\xE2\x82\xAC\xE2\x82\xAC", true);  // two euro signs, 3 bytes each
  CHECK(tail.lines() == Lines{"abcd", "abc", "ab\xC3\xA9", "\xE2\x82\xAC"});
}

TEST_CASE("logmux::TailBuffer with no room keeps nothing", "[logmux]") {
  TailBuffer tail(0, 10);
  tail.push("x\n", true);
  CHECK(tail.lines().empty());
}

TEST_CASE("logmux::TailBuffer keeps every line but times only those that are progress",
          "[logmux]") {
  TailBuffer tail(5, 100);
  tail.push("\r", false);
  CHECK_FALSE(tail.last_line_at());
  tail.push(" 50%|#####     | 5/10\r", true);
  auto progress_at = tail.last_line_at();
  REQUIRE(progress_at);
  tail.push(" 50%|#####     | 5/10\r", false);
  CHECK(tail.last_line_at() == progress_at);
  CHECK(tail.lines() == Lines{"", " 50%|#####     | 5/10", " 50%|#####     | 5/10"});
}
