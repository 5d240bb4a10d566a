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
