#include "logmux/prefix.hpp"

#include <catch2/catch.hpp>

using gangrun::logmux::expand_prefix;
using gangrun::logmux::k_default_prefix_template;
using gangrun::logmux::PrefixFields;

TEST_CASE("logmux::expand_prefix fills torchrun's variables", "[logmux]") {
  PrefixFields fields{
      .rank = 11, .local_rank = 3, .node_rank = 1, .role_name = "trainer", .host = "gpu7"};
  CHECK(expand_prefix(k_default_prefix_template, fields) == "[rank11]: ");
  CHECK(expand_prefix("${role_name}/${node_rank}/${local_rank}@${host}:${rank}> ", fields) ==
        "trainer/1/3@gpu7:11> ");
  CHECK(expand_prefix("${rank}${rank}", fields) == "1111");
  CHECK(expand_prefix("no variables", fields) == "no variables");
  CHECK(expand_prefix("", fields).empty());
}

TEST_CASE("logmux::expand_prefix leaves unknown variables as written", "[logmux]") {
  PrefixFields fields{.rank = 0, .local_rank = 0, .node_rank = 0, .role_name = "", .host = "h"};
  CHECK(expand_prefix("${what} ${rank}", fields) == "${what} 0");
  CHECK(expand_prefix("$rank ${rank", fields) == "$rank ${rank");
  CHECK(expand_prefix("[${role_name}]", fields) == "[]");
}
