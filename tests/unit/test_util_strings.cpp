#include "util/signals.hpp"
#include "util/strings.hpp"

#include <catch2/catch.hpp>

namespace strings = gangrun::strings;

TEST_CASE("util::strings::split keeps empty fields", "[util]") {
  CHECK(strings::split("a,,b", ',') == std::vector<std::string>{"a", "", "b"});
  CHECK(strings::split("", ',') == std::vector<std::string>{""});
}

TEST_CASE("util::strings::parse_int accepts whole decimal numbers only", "[util]") {
  CHECK(strings::parse_int("42") == 42);
  CHECK(strings::parse_int("+3") == 3);
  CHECK(strings::parse_int("-5") == -5);
  CHECK_FALSE(strings::parse_int(""));
  CHECK_FALSE(strings::parse_int("4x"));
  CHECK_FALSE(strings::parse_int("abc"));
  CHECK_FALSE(strings::parse_int("99999999999999999999999"));
}

TEST_CASE("util::strings::expand_template replaces known names only", "[util]") {
  auto lookup = [](std::string_view name) -> std::optional<std::string> {
    if (name == "rank") return "3";
    return std::nullopt;
  };
  CHECK(strings::expand_template("[r${rank}] ${other} ${rank", lookup) == "[r3] ${other} ${rank");
}

TEST_CASE("util::strings::shell_quote quotes only what needs it", "[util]") {
  CHECK(strings::shell_quote("train.py") == "train.py");
  CHECK(strings::shell_quote("echo hi") == "'echo hi'");
  CHECK(strings::shell_quote("it's") == "'it'\\''s'");
  CHECK(strings::shell_quote("") == "''");
}

TEST_CASE("util::strings::shell_join quotes each word", "[util]") {
  CHECK(strings::shell_join({}).empty());
  CHECK(strings::shell_join({"python", "train.py", "--name", "my run", ""}) ==
        "python train.py --name 'my run' ''");
}

TEST_CASE("util::signals maps names and numbers both ways", "[util]") {
  CHECK(gangrun::signals::name(15) == "SIGTERM");
  CHECK(gangrun::signals::from_text("SIGUSR1") == 10);
  CHECK(gangrun::signals::from_text("usr2") == 12);
  CHECK(gangrun::signals::from_text("9") == 9);
  CHECK_FALSE(gangrun::signals::from_text("SIGNOPE"));
  CHECK_FALSE(gangrun::signals::from_text("0"));
}

TEST_CASE("util::strings::edit_distance counts single-character edits", "[util]") {
  using gangrun::strings::edit_distance;
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("nproc_per_node", "nproc_per_node") == 0);
  CHECK(edit_distance("nproc_per_nod", "nproc_per_node") == 1);   // insertion
  CHECK(edit_distance("nproc_pre_node", "nproc_per_node") == 2);  // swapped letters
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("util::strings::wrap fills lines greedily up to the width", "[util]") {
  using Lines = std::vector<std::string>;
  CHECK(strings::wrap("one two three four", 9) == Lines{"one two", "three", "four"});
  CHECK(strings::wrap("one two", 7) == Lines{"one two"});  // exactly the width fits
  CHECK(strings::wrap("  one   two  ", 80) == Lines{"one two"});
  CHECK(strings::wrap("a verylongword b", 4) == Lines{"a", "verylongword", "b"});
  CHECK(strings::wrap("", 10) == Lines{""});
  CHECK(strings::wrap("   ", 10) == Lines{""});
}

TEST_CASE("util::strings::plain_decimal accepts digits without sign or leading zero", "[util]") {
  CHECK(strings::plain_decimal("0"));
  CHECK(strings::plain_decimal("7"));
  CHECK(strings::plain_decimal("120"));
  CHECK_FALSE(strings::plain_decimal(""));
  CHECK_FALSE(strings::plain_decimal("00"));
  CHECK_FALSE(strings::plain_decimal("012"));
  CHECK_FALSE(strings::plain_decimal("+1"));
  CHECK_FALSE(strings::plain_decimal("-1"));
  CHECK_FALSE(strings::plain_decimal("0x1"));
  CHECK_FALSE(strings::plain_decimal(" 1"));
  CHECK_FALSE(strings::plain_decimal("1.5"));
}

TEST_CASE("util::strings::duration_text gives milliseconds below 10 s, then seconds", "[util]") {
  using std::chrono::milliseconds;
  CHECK(strings::duration_text(milliseconds(0)) == "0 ms");
  CHECK(strings::duration_text(milliseconds(200)) == "200 ms");
  CHECK(strings::duration_text(milliseconds(5000)) == "5000 ms");
  CHECK(strings::duration_text(milliseconds(9999)) == "9999 ms");
  CHECK(strings::duration_text(milliseconds(10000)) == "10 s");
  CHECK(strings::duration_text(milliseconds(12500)) == "12.5 s");
  CHECK(strings::duration_text(milliseconds(30000)) == "30 s");
  CHECK(strings::duration_text(milliseconds(1234567)) == "1234.57 s");
  CHECK(strings::duration_text(milliseconds(3600000000)) == "3.6e+06 s");
}
