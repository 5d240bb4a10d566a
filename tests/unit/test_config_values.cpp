// The single-value validators, directly: the messages they return are the
// tail of every usage error about a value.
#include "config/option_values.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <vector>

using namespace gangrun::config;  // NOLINT: test file, many parsers

TEST_CASE("config::parse_proc_count accepts N and the device words", "[config]") {
  CHECK(parse_proc_count("8")->number == 8);
  CHECK(parse_proc_count("AUTO")->kind == ProcCount::Kind::automatic);
  CHECK_FALSE(parse_proc_count(""));
  CHECK_FALSE(parse_proc_count("99999999999"));
  CHECK(parse_proc_count("0").error().message() ==
        "'0' is not a positive number (expected N, auto, gpu, xpu or cpu)");
}

TEST_CASE("config::parse_nnodes accepts N and N:N only", "[config]") {
  CHECK(parse_nnodes("4") == 4);
  CHECK(parse_nnodes("4:4") == 4);
  CHECK(parse_nnodes("3:2").error().message() == "minimum 3 exceeds maximum 2 in '3:2'");
  CHECK_THAT(parse_nnodes("2:3").error().message(), Catch::Matchers::Contains("c10d"));
  CHECK_FALSE(parse_nnodes("0:1"));
  CHECK_FALSE(parse_nnodes(":"));
  CHECK_FALSE(parse_nnodes("1:2:3"));
}

TEST_CASE("config::parse_port treats 0 as no port", "[config]") {
  CHECK(parse_port("1").value() == std::optional<int>(1));
  CHECK(parse_port("0").value() == std::optional<int>());
  CHECK_FALSE(parse_port("65536"));
  CHECK_FALSE(parse_port("abc"));
  CHECK_FALSE(parse_port(""));
}

TEST_CASE("config::parse_bool and parse_count read environment-style booleans", "[config]") {
  CHECK(parse_bool("On") == true);
  CHECK(parse_bool("") == false);
  CHECK_FALSE(parse_bool("2"));
  CHECK(parse_count("3") == 3);
  CHECK(parse_count("true") == 1);
  CHECK_FALSE(parse_count("-1"));
}

TEST_CASE("config::parse_streams reads torchrun's redirect values", "[config]") {
  CHECK(parse_streams("0")->all == Streams{});
  CHECK(parse_streams("2")->all == Streams{false, true});
  StreamsByLocalRank per_rank = *parse_streams("1:3, 0:1");
  CHECK(per_rank.for_local_rank(1) == Streams{true, true});
  CHECK(per_rank.for_local_rank(0) == Streams{true, false});
  CHECK(per_rank.for_local_rank(7) == Streams{});
  CHECK_FALSE(parse_streams(""));
  CHECK_FALSE(parse_streams("-1"));
  CHECK_FALSE(parse_streams("0:1,"));
  CHECK_FALSE(parse_streams("-1:1"));
}

TEST_CASE("config::parse_local_ranks reads a set", "[config]") {
  CHECK(parse_local_ranks("3,0,3")->value() == std::set<int>{0, 3});
  CHECK_FALSE(parse_local_ranks("")->has_value());
  CHECK_FALSE(parse_local_ranks("x"));
}

TEST_CASE("config::parse_signals reads names and numbers", "[config]") {
  CHECK(parse_signals("hup,SigInt,usr2,15") == std::vector<int>{SIGHUP, SIGINT, SIGUSR2, SIGTERM});
  CHECK_FALSE(parse_signals(""));
  CHECK_FALSE(parse_signals("TERM,"));
  CHECK_FALSE(parse_signals("0"));
  CHECK_FALSE(parse_signals("KILL"));
  CHECK_FALSE(parse_signals("SIGSTOP"));
}

TEST_CASE("config::parse_signals refuses signals that cannot ask for a stop", "[config]") {
  for (const char* name :
       {"CHLD", "SIGCONT", "STOP", "KILL", "TSTP", "TTIN", "TTOU", "WINCH", "URG", "SEGV", "BUS",
        "FPE", "ILL", "TRAP", "SYS", "ABRT", "PIPE", "32", "33"}) {
    INFO(name);
    auto parsed = parse_signals(std::string("TERM,") + name);
    REQUIRE_FALSE(parsed);
    CHECK_THAT(parsed.error().message(),
               Catch::Matchers::StartsWith("'" + std::string(name) + "' cannot be handled: "));
    CHECK_THAT(parsed.error().message(), Catch::Matchers::Contains("such as SIGTERM"));
  }
  CHECK_THAT(parse_signals("SIGCHLD").error().message(),
             Catch::Matchers::Contains("SIGCHLD reports an event"));
  CHECK_THAT(parse_signals("tstp").error().message(),
             Catch::Matchers::Contains("SIGTSTP is job control"));
  CHECK_THAT(parse_signals("11").error().message(),
             Catch::Matchers::Contains("SIGSEGV reports a fault in gangrun itself"));
  // USR1/USR2 listed here stop the gang after being forwarded, as in torchrun.
  CHECK(parse_signals("USR1,USR2,ALRM,XCPU,PWR,VTALRM") ==
        std::vector<int>{SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPWR, SIGVTALRM});
  CHECK(parse_signals(std::to_string(SIGRTMIN)) == std::vector<int>{SIGRTMIN});
  CHECK(unhandleable_signal_reason(SIGTERM) == std::nullopt);
}

TEST_CASE("config::parse_non_negative_seconds refuses negative, non-finite and huge", "[config]") {
  CHECK(parse_non_negative_seconds("0.5") == 0.5);
  CHECK(parse_non_negative_seconds("0") == 0.0);
  CHECK(parse_non_negative_seconds("86400") == 86400.0);
  for (const char* text :
       {"-0.5", "-1", "inf", "-inf", "nan", "1e16", "1e308", "1e309", "86400.5", "1s", ""}) {
    INFO(text);
    auto parsed = parse_non_negative_seconds(text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message() ==
          "'" + std::string(text) + "' is not a number of seconds from 0 to 86400 (one day)");
  }
}

TEST_CASE("config::parse_max_restarts bounds the attempt counter", "[config]") {
  CHECK(parse_max_restarts("0") == 0);
  CHECK(parse_max_restarts("1000000") == 1000000);
  CHECK_FALSE(parse_max_restarts("-1"));
  CHECK(parse_max_restarts("2147483647").error().message() ==
        "'2147483647' is not a restart count from 0 to 1000000");
}
