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
