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

TEST_CASE("logmux::prefix_for_line leaves out a prefix the line already has", "[logmux]") {
  using gangrun::logmux::prefix_for_line;
  const std::string_view mine = "[rank1]: ";
  // What torch 2.13 prints for rank 1 once init_process_group knows the rank:
  // its excepthook's traceback and c10's logging.
  CHECK(prefix_for_line(mine, "[rank1]: Traceback (most recent call last):\n").empty());
  CHECK(prefix_for_line(mine, "[rank1]:[W1128 10:04:24.922459134 ProcessGroupGloo.cpp:1] x\n")
            .empty());
  CHECK(prefix_for_line(mine, "[rank1]:\n").empty());
  // Anything else gets it: another rank's tag, a longer rank, a tag not at
  // the start, an unclosed one, plain text, an empty line.
  CHECK(prefix_for_line(mine, "[rank0]: Traceback\n") == mine);
  CHECK(prefix_for_line(mine, "[rank10]: Traceback\n") == mine);
  CHECK(prefix_for_line(mine, " [rank1]: indented\n") == mine);
  CHECK(prefix_for_line(mine, "[rank1] no colon\n") == mine);
  CHECK(prefix_for_line(mine, "plain\n") == mine);
  CHECK(prefix_for_line(mine, "\n") == mine);
  CHECK(prefix_for_line(mine, "") == mine);
}

TEST_CASE("logmux::prefix_for_line recognises only a prefix closed by punctuation", "[logmux]") {
  using gangrun::logmux::prefix_for_line;
  CHECK(prefix_for_line("<w1> ", "<w1> said it\n").empty());  // any template's own prefix
  CHECK(prefix_for_line("1", "12 apples\n") == "1");  // "${rank}": 12 would read as rank 1's
  CHECK(prefix_for_line("rank1 ", "rank12 x\n") == "rank1 ");
  CHECK(prefix_for_line("", "anything\n").empty());
  CHECK(prefix_for_line("   ", "   x\n") == "   ");  // blanks are always given
}
