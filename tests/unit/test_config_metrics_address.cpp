// --metrics-addr: loopback unless a host is named, port 0 allowed, and a
// bad address named with the flag and the forms it takes.
#include "config/metrics_address.hpp"

#include <catch2/catch.hpp>

using gangrun::config::parse_metrics_address;

TEST_CASE("a metrics address without a host is loopback", "[config][metrics]") {
  CHECK(parse_metrics_address("9400")->host == "127.0.0.1");
  CHECK(parse_metrics_address("9400")->port == 9400);
  CHECK(parse_metrics_address(":9400")->host == "127.0.0.1");
  CHECK(parse_metrics_address("0")->port == 0);
}

TEST_CASE("a metrics address may name a host or an IPv6 address", "[config][metrics]") {
  CHECK(parse_metrics_address("0.0.0.0:9400")->host == "0.0.0.0");
  CHECK(parse_metrics_address("node-1.cluster:9400")->host == "node-1.cluster");
  auto v6 = parse_metrics_address("[::1]:9401");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 9401);
}

TEST_CASE("a bad metrics address is an error naming the flag", "[config][metrics]") {
  for (const char* text : {"", "host:", "host:65536", "host:-1", "::1:9400", "[::1]", "[::1]9400",
                           "a b:9400", "host:http"}) {
    INFO(text);
    auto parsed = parse_metrics_address(text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message().find("--metrics-addr") != std::string::npos);
  }
}
