// Expected values were checked against `scontrol show hostnames` of Slurm
// 22.05, except where a case says it follows newer Slurm or refuses.
#include "expected_checks.hpp"
#include "slurm/hostlist.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using gangrun::ErrorCode;
using gangrun::slurm::expand_hostlist;
using Hosts = std::vector<std::string>;

Hosts expand(std::string_view expression) {
  return gangrun::testing::value_of(expand_hostlist(expression));
}

// The message of the error expression fails with (a failed check if it does not).
std::string error_of(std::string_view expression) {
  auto result = expand_hostlist(expression);
  if (result) FAIL("'" << expression << "' expanded to " << result->size() << " hosts");
  CHECK(result.error().code() == ErrorCode::usage);
  return result.error().message();
}

}  // namespace

TEST_CASE("slurm hostlist: plain names and separators", "[slurm]") {
  CHECK(expand("node1") == Hosts{"node1"});
  CHECK(expand("alpha beta,gamma") == Hosts{"alpha", "beta", "gamma"});
  CHECK(expand(",,a,, \t\nb\n") == Hosts{"a", "b"});
  CHECK(expand("a\tb\nc") == Hosts{"a", "b", "c"});
  CHECK(expand("node1,node1") == Hosts{"node1", "node1"});
  CHECK(expand("a.b-c_d:e") == Hosts{"a.b-c_d:e"});
}

TEST_CASE("slurm hostlist: empty and blank expressions are empty lists", "[slurm]") {
  CHECK(expand("").empty());
  CHECK(expand(" ").empty());
  CHECK(expand(",").empty());
  CHECK(expand(" ,\t\n,").empty());
}

TEST_CASE("slurm hostlist: ranges, commas inside brackets, duplicates", "[slurm]") {
  CHECK(expand("a[1-3]") == Hosts{"a1", "a2", "a3"});
  CHECK(expand("a[1,3-4],b7") == Hosts{"a1", "a3", "a4", "b7"});
  CHECK(expand("gpu[1-2,5],cpu[01-02]") == Hosts{"gpu1", "gpu2", "gpu5", "cpu01", "cpu02"});
  CHECK(expand("tux[2,1-2]") == Hosts{"tux2", "tux1", "tux2"});
  CHECK(expand("a[1-3,2]") == Hosts{"a1", "a2", "a3", "a2"});
  CHECK(expand("a[7-7]") == Hosts{"a7"});
  CHECK(expand("a[5-]") == Hosts{"a5"});
  CHECK(expand("a[01-]x[2-]") == Hosts{"a01x2"});
  CHECK(expand("a[1-2],,b[3] c") == Hosts{"a1", "a2", "b3", "c"});
  CHECK(expand("[1-2]") == Hosts{"1", "2"});
}

TEST_CASE("slurm hostlist: prefixes with dashes and dots", "[slurm]") {
  CHECK(expand("a-[1-2]") == Hosts{"a-1", "a-2"});
  CHECK(expand("a-b.c-[1-2]") == Hosts{"a-b.c-1", "a-b.c-2"});
  CHECK(expand("rack-1.node[1-2]") == Hosts{"rack-1.node1", "rack-1.node2"});
  CHECK(expand("-a,a -[1]") == Hosts{"-a", "a", "-1"});
}

TEST_CASE("slurm hostlist: zero padding takes the width of the low bound", "[slurm]") {
  CHECK(expand("a[08-11]") == Hosts{"a08", "a09", "a10", "a11"});
  CHECK(expand("a[8-11]") == Hosts{"a8", "a9", "a10", "a11"});
  CHECK(expand("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
  CHECK(expand("x[001-10]") ==
        Hosts{"x001", "x002", "x003", "x004", "x005", "x006", "x007", "x008", "x009", "x010"});
  CHECK(expand("a[01-2]") == Hosts{"a01", "a02"});
  CHECK(expand("a[1-02]") == Hosts{"a1", "a2"});
  CHECK(expand("a[007]") == Hosts{"a007"});
  CHECK(expand("a[0000000000000000000001]") == Hosts{"a0000000000000000000001"});
  CHECK(expand("a[18446744073709551614-18446744073709551615]") ==
        Hosts{"a18446744073709551614", "a18446744073709551615"});
}

TEST_CASE("slurm hostlist: several groups, in Slurm's order", "[slurm]") {
  CHECK(expand("rack[1-2]-node[01-02]") ==
        Hosts{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
  CHECK(expand("r[1-2]n[1,3]") == Hosts{"r1n1", "r1n3", "r2n1", "r2n3"});
  CHECK(expand("a[1-2][3-4]") == Hosts{"a13", "a14", "a23", "a24"});
  CHECK(expand("[1][2]") == Hosts{"12"});
  CHECK(expand("a[3,1-2]b[1-2]") == Hosts{"a3b1", "a3b2", "a1b1", "a1b2", "a2b1", "a2b2"});
  // Three or more: the last group fastest, then the others from the first.
  CHECK(expand("a[1-2]b[1-2]c[1-2]") ==
        Hosts{"a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"});
  CHECK(expand("a[1-2]b[1-3]c[4-5]") == Hosts{"a1b1c4", "a1b1c5", "a2b1c4", "a2b1c5", "a1b2c4",
                                              "a1b2c5", "a2b2c4", "a2b2c5", "a1b3c4", "a1b3c5",
                                              "a2b3c4", "a2b3c5"});
  CHECK(expand("a[1-2]b[3-4]c[5-6]d[7-8]") ==
        Hosts{"a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b4c5d7", "a1b4c5d8", "a2b4c5d7",
              "a2b4c5d8", "a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8", "a1b4c6d7", "a1b4c6d8",
              "a2b4c6d7", "a2b4c6d8"});
}

TEST_CASE("slurm hostlist: a suffix after the last group, as newer Slurm has it", "[slurm]") {
  // Slurm 22.05 rejects these; 23.02.5 and later accept them.
  CHECK(expand("n[1-3]-ib") == Hosts{"n1-ib", "n2-ib", "n3-ib"});
  CHECK(expand("node[1-2]x") == Hosts{"node1x", "node2x"});
  CHECK(expand("node[01-04,07],gpu[1-2]-ib x") ==
        Hosts{"node01", "node02", "node03", "node04", "node07", "gpu1-ib", "gpu2-ib", "x"});
  CHECK(expand("a[1-2]b[1-2]c") == Hosts{"a1b1c", "a1b2c", "a2b1c", "a2b2c"});
}

TEST_CASE("slurm hostlist: malformed ranges are errors that name the expression", "[slurm]") {
  CHECK(error_of("a[5-3]") == "invalid hostlist 'a[5-3]': range 5-3 runs backwards");
  CHECK(error_of("a[1-2]x[5-3]") == "invalid hostlist 'a[1-2]x[5-3]': range 5-3 runs backwards");
  CHECK(error_of("a[]") == "invalid hostlist 'a[]': empty range in brackets");
  CHECK(error_of("a[1,]").find("empty range") != std::string::npos);
  CHECK(error_of("a[,1]").find("empty range") != std::string::npos);
  CHECK(error_of("a[1,,2]").find("empty range") != std::string::npos);
  for (const char* expression :
       {"a[x]", "a[-1]", "a[-]", "a[1--2]", "a[1-2-3]", "h[1-3:2]", "a[000x133]", "a[ 1]", "a[1 ]",
        "a[+1]", "a[1, 2]", "a[1-\n2]", "a[99999999999999999999]", "a[18446744073709551616]"}) {
    INFO(expression);
    CHECK(error_of(expression).find("is not a number") != std::string::npos);
  }
}

TEST_CASE("slurm hostlist: brackets that do not pair are errors", "[slurm]") {
  // Slurm 22.05 turns "a[1" into "a]"; newer Slurm rejects it, as we do.
  CHECK(error_of("a[1") == "invalid hostlist 'a[1': '[' without ']'");
  CHECK(error_of("a[").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("[").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("ab[1,2 c").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("a[[1]]").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("a[1[2]]").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("a[1]b[c[2]").find("'[' without ']'") != std::string::npos);
  CHECK(error_of("a[1]]") == "invalid hostlist 'a[1]]': ']' without '['");
  CHECK(error_of("a[1]b]c[2]").find("']' without '['") != std::string::npos);
  CHECK(error_of("x[1]][2,3]").find("']' without '['") != std::string::npos);
  // 22.05 takes these as names but garbles "a]b[1,2]" into "a]b]" and "2]".
  CHECK(error_of("a]").find("']' without '['") != std::string::npos);
  CHECK(error_of("a]b[1]").find("']' without '['") != std::string::npos);
  CHECK(error_of("a]b[1,2]").find("']' without '['") != std::string::npos);
}

TEST_CASE("slurm hostlist: hostlist functions are refused", "[slurm]") {
  CHECK(error_of("feature{gpu}").find("hostlist function") != std::string::npos);
  CHECK(error_of("a[1-2],{x}").find("only the Slurm controller") != std::string::npos);
}

TEST_CASE("slurm hostlist: limits fail instead of exhausting memory", "[slurm]") {
  CHECK(expand("a[0-65535]").size() == 65536);
  CHECK(expand("a[0-65535],b[0-65535]").size() == 2 * 65536);
  CHECK(error_of("a[0-65536]") ==
        "invalid hostlist 'a[0-65536]': range 0-65536 has more than 65536 hosts");
  CHECK(error_of("a[1-100000]").find("more than 65536 hosts") != std::string::npos);
  CHECK(error_of("a[0-18446744073709551615]").find("more than 65536") != std::string::npos);

  // The whole expression: 2^20 hosts at most, however they are reached.
  CHECK(expand("a[0-1023]b[0-1023]").size() == gangrun::slurm::k_max_hosts);
  CHECK(error_of("a[0-1023]b[0-1024]").find("more than 1048576 hosts") != std::string::npos);
  CHECK(error_of("a[0-65535]b[0-65535]c[0-65535]").find("more than 1048576") != std::string::npos);
  CHECK(error_of("a[0-1023]b[0-1023],c").find("more than 1048576") != std::string::npos);
  std::string many_ranges = "a[";
  for (int i = 0; i < 20; ++i) many_ranges += "0-65535,";
  many_ranges += "0]";
  CHECK(error_of(many_ranges).find("more than 1048576") != std::string::npos);
}
