#include "logmux/line_splitter.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using gangrun::logmux::LineSplitter;

namespace {

std::vector<std::string> feed_all(LineSplitter& splitter, std::string_view bytes) {
  std::vector<std::string> lines;
  splitter.feed(bytes, [&](std::string_view line) { lines.emplace_back(line); });
  return lines;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("logmux::LineSplitter cuts at newline and carriage return", "[logmux]") {
  LineSplitter splitter;
  CHECK(feed_all(splitter, "one\ntwo\rthree\r\nfour\n") ==
        Lines{"one\n", "two\r", "three\r\n", "four\n"});
  CHECK_FALSE(splitter.has_fragment());
  CHECK(feed_all(splitter, "\n\n") == Lines{"\n", "\n"});
  CHECK(feed_all(splitter, "") == Lines{});
}

TEST_CASE("logmux::LineSplitter keeps a fragment across feeds", "[logmux]") {
  LineSplitter splitter;
  CHECK(feed_all(splitter, "hel") == Lines{});
  CHECK(splitter.has_fragment());
  CHECK(feed_all(splitter, "lo\nwor") == Lines{"hello\n"});
  CHECK(feed_all(splitter, "ld") == Lines{});
  CHECK(splitter.take_fragment() == "world");
  CHECK_FALSE(splitter.has_fragment());
  CHECK(splitter.take_fragment().empty());
  // After a take the next line starts fresh.
  CHECK(feed_all(splitter, "next\n") == Lines{"next\n"});
}

TEST_CASE("logmux::LineSplitter holds a final carriage return until the next byte", "[logmux]") {
  SECTION("followed by newline: one line") {
    LineSplitter splitter;
    CHECK(feed_all(splitter, "a\r") == Lines{});
    CHECK(splitter.has_fragment());
    CHECK(feed_all(splitter, "\nb\n") == Lines{"a\r\n", "b\n"});
  }
  SECTION("followed by text: a progress line") {
    LineSplitter splitter;
    CHECK(feed_all(splitter, "10%\r") == Lines{});
    CHECK(feed_all(splitter, "20%\r") == Lines{"10%\r"});
    CHECK(feed_all(splitter, "done\n") == Lines{"20%\r", "done\n"});
  }
  SECTION("taken at EOF: a whole line") {
    LineSplitter splitter;
    CHECK(feed_all(splitter, "x\r") == Lines{});
    CHECK(splitter.take_fragment() == "x\r");
  }
}

TEST_CASE("logmux::LineSplitter cuts overlong lines into max_line pieces", "[logmux]") {
  SECTION("a whole line within one feed keeps its terminator on the last piece") {
    LineSplitter splitter(4);
    CHECK(feed_all(splitter, "abcdefghij\r\n") == Lines{"abcd", "efgh", "ij\r\n"});
    CHECK(feed_all(splitter, "abcd\n") == Lines{"abcd\n"});
  }
  SECTION("an unterminated line is cut as it grows") {
    LineSplitter splitter(4);
    CHECK(feed_all(splitter, "abc") == Lines{});
    CHECK(feed_all(splitter, "defghi") == Lines{"abcd", "efgh"});
    CHECK(feed_all(splitter, "jk") == Lines{});
    CHECK(feed_all(splitter, "lm") == Lines{"ijkl"});
    CHECK(splitter.take_fragment() == "m");
  }
  SECTION("a held carriage return does not count toward the length") {
    LineSplitter splitter(4);
    CHECK(feed_all(splitter, "abcd\r") == Lines{});
    CHECK(feed_all(splitter, "\n") == Lines{"abcd\r\n"});
  }
}

TEST_CASE("logmux::LineSplitter gives the same lines however the bytes are chunked", "[logmux]") {
  std::mt19937 random(12345);
  const std::string alphabet = "ab\n\r";
  std::string text;
  for (int i = 0; i < 20000; ++i) text += alphabet[random() % alphabet.size()];

  LineSplitter whole(7);
  Lines expected = feed_all(whole, text);
  std::string expected_fragment = whole.take_fragment();

  for (int round = 0; round < 20; ++round) {
    LineSplitter splitter(7);
    Lines lines;
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t size = 1 + random() % 13;
      splitter.feed(std::string_view(text).substr(pos, size),
                    [&](std::string_view line) { lines.emplace_back(line); });
      pos += size;
    }
    REQUIRE(lines == expected);
    REQUIRE(splitter.take_fragment() == expected_fragment);
  }

  // No byte lost or duplicated.
  std::string joined;
  for (const auto& line : expected) joined += line;
  CHECK(joined + expected_fragment == text);
}
