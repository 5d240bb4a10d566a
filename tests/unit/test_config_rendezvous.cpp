// torchrun's rendezvous options: --nnodes MIN:MAX, --rdzv_backend,
// --rdzv_endpoint, --rdzv_conf and --local_addr, as single values, end to end
// through the command line, layered from the environment, and checked
// against each other (a range needs c10d, c10d needs an endpoint, the static
// backend takes the endpoint as its master).
#include "config/cli.hpp"
#include "config/rendezvous_values.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::config::Endpoint;
using gangrun::config::NodeRange;
using gangrun::config::Options;
using gangrun::config::RendezvousConf;
using gangrun::config::Source;

using gangrun::config::test::launch;
using gangrun::config::test::usage_error;

// Options for a c10d launch at node0, with `extra` before the program.
std::vector<std::string> c10d(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--rdzv_backend", "c10d", "--rdzv_endpoint", "node0"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.emplace_back("x");
  return args;
}

}  // namespace

TEST_CASE("config::parse_node_range reads N and MIN:MAX", "[config][rendezvous]") {
  using gangrun::config::parse_node_range;
  CHECK(parse_node_range("4") == NodeRange{4, 4});
  CHECK(parse_node_range("2:2") == NodeRange{2, 2});
  CHECK(parse_node_range("1:4") == NodeRange{1, 4});
  CHECK(parse_node_range("3:2").error().message() == "minimum 3 exceeds maximum 2 in '3:2'");
  CHECK_THAT(parse_node_range("0").error().message(), StartsWith("'0' is not a node count"));
  CHECK_FALSE(parse_node_range("0:2"));
  CHECK_FALSE(parse_node_range("1:"));
  CHECK_FALSE(parse_node_range("1:2:3"));
}

TEST_CASE("config::parse_rdzv_backend takes static and c10d, points etcd to c10d",
          "[config][rendezvous]") {
  using gangrun::config::parse_rdzv_backend;
  CHECK(parse_rdzv_backend("static") == gangrun::config::RendezvousBackend::static_ranks);
  CHECK(parse_rdzv_backend("C10D") == gangrun::config::RendezvousBackend::c10d);
  CHECK(parse_rdzv_backend("etcd").error().message() ==
        "rendezvous backend etcd is not supported; use c10d (--rdzv_backend c10d "
        "--rdzv_endpoint HOST:PORT)");
  CHECK_THAT(parse_rdzv_backend("ETCD-v2").error().message(),
             StartsWith("rendezvous backend etcd-v2 is not supported; use c10d"));
  CHECK(parse_rdzv_backend("zeus").error().message() ==
        "'zeus' is not a rendezvous backend (expected static or c10d)");
}

TEST_CASE("config::parse_rdzv_endpoint reads HOST[:PORT] and bracketed IPv6",
          "[config][rendezvous]") {
  using gangrun::config::parse_rdzv_endpoint;
  CHECK(parse_rdzv_endpoint("node0") == Endpoint{"node0", 29400});
  CHECK(parse_rdzv_endpoint("node0.example.com:1234") == Endpoint{"node0.example.com", 1234});
  CHECK(parse_rdzv_endpoint("10.0.0.1:65535") == Endpoint{"10.0.0.1", 65535});
  CHECK(parse_rdzv_endpoint(" [::1]:29401 ") == Endpoint{"::1", 29401});
  CHECK(parse_rdzv_endpoint("[fe80::1%eth0]") == Endpoint{"fe80::1%eth0", 29400});
  for (const char* bad :
       {"", "node0:", "node0:0", "node0:65536", "node0:http", ":29400", "::1", "fe80::1:80", "[::1",
        "[::1]80", "[]:80", "[node0]:80", "no de:80", "node0:80/x"}) {
    INFO(bad);
    auto parsed = parse_rdzv_endpoint(bad);
    REQUIRE_FALSE(parsed);
    CHECK_THAT(parsed.error().message(), Contains("expected HOST[:PORT]"));
  }
  CHECK_THAT(parse_rdzv_endpoint("::1").error().message(),
             Contains("an IPv6 address goes in brackets"));
}

TEST_CASE("config::parse_rdzv_conf reads torchrun's keys over the defaults",
          "[config][rendezvous]") {
  using gangrun::config::parse_rdzv_conf;
  CHECK(parse_rdzv_conf("") == RendezvousConf{});
  RendezvousConf conf = *parse_rdzv_conf(
      "join_timeout=900, last_call_timeout=5,close_timeout=0.5,read_timeout=7,"
      "is_host=FALSE,keep_alive_interval=0.25,keep_alive_max_attempt=6,");
  CHECK(conf.join_timeout == 900);
  CHECK(conf.last_call_timeout == 5);
  CHECK(conf.close_timeout == 0.5);
  CHECK(conf.read_timeout == 7);
  CHECK(conf.is_host == false);
  CHECK(conf.keep_alive_interval == 0.25);
  CHECK(conf.keep_alive_max_attempt == 6);
  CHECK(parse_rdzv_conf("timeout=120")->join_timeout == 120);
  for (const char* word : {"true", "Yes", "1"})
    CHECK(parse_rdzv_conf(std::string("is_host=") + word)->is_host == true);
  for (const char* word : {"false", "NO", "0"})
    CHECK(parse_rdzv_conf(std::string("is_host=") + word)->is_host == false);
}

TEST_CASE("config::parse_rdzv_conf names what is wrong", "[config][rendezvous]") {
  using gangrun::config::parse_rdzv_conf;
  auto message = [](const char* text) { return parse_rdzv_conf(text).error().message(); };
  CHECK_THAT(message("store_type=file"),
             StartsWith("'store_type' in 'store_type=file' is not a rendezvous setting (known: "
                        "join_timeout, timeout, last_call_timeout"));
  CHECK_THAT(message("store_type=file"), Contains("keep_alive_max_attempt)"));
  CHECK(message("join_timeout") ==
        "'join_timeout' in 'join_timeout' is not KEY=VALUE "
        "(e.g. join_timeout=900,is_host=false)");
  CHECK(message("read_timeout=") == "read_timeout in 'read_timeout=' has no value");
  CHECK_THAT(message("join_timeout=-1"),
             StartsWith("join_timeout in 'join_timeout=-1': '-1' is not a number of seconds"));
  CHECK_THAT(message("close_timeout=1e9"), Contains("from 0 to 86400"));
  CHECK_THAT(message("is_host=maybe"), Contains("'maybe' is not a boolean"));
  CHECK_THAT(message("keep_alive_interval=0"), Contains("above 0"));
  CHECK_THAT(message("keep_alive_max_attempt=0"), Contains("'0' is not a positive integer"));
  CHECK(message("timeout=1,join_timeout=2") ==
        "join_timeout is set twice in 'timeout=1,join_timeout=2'");
}

TEST_CASE("config::parse_command_line takes an elastic --nnodes range with c10d",
          "[config][rendezvous]") {
  Options o = launch(c10d({"--nnodes", "1:4"}));
  CHECK(o.rdzv_backend == gangrun::config::RendezvousBackend::c10d);
  CHECK(o.min_nnodes == 1);
  CHECK(o.nnodes == 4);
  CHECK(o.rdzv_endpoint == Endpoint{"node0", 29400});
  Options fixed = launch(c10d({"--nnodes", "3"}));
  CHECK(fixed.min_nnodes == 3);
  CHECK(fixed.nnodes == 3);
  Options same = launch({"--nnodes", "2:2", "x"});
  CHECK(same.min_nnodes == 2);
  CHECK(same.nnodes == 2);
  CHECK(same.rdzv_backend == gangrun::config::RendezvousBackend::static_ranks);
  CHECK(launch({"x"}).min_nnodes == 1);

  std::string elastic = usage_error({"--nnodes", "1:4", "--rdzv_backend", "static", "x"});
  CHECK_THAT(elastic, StartsWith("--nnodes: '1:4' is an elastic range"));
  CHECK_THAT(elastic, Contains("needs --rdzv_backend c10d"));
  CHECK(usage_error(c10d({"--nnodes", "4:1"})) == "--nnodes: minimum 4 exceeds maximum 1 in '4:1'");
  std::string total = usage_error(c10d({"--nnodes", "1:2", "--num_processes", "4"}));
  CHECK_THAT(total, StartsWith("--num_processes: a total process count cannot be split over an "
                               "elastic node range (--nnodes 1:2)"));
}

TEST_CASE("config::parse_command_line: c10d needs an endpoint and ignores --node_rank",
          "[config][rendezvous]") {
  CHECK(usage_error({"--rdzv_backend", "c10d", "x"}) ==
        "--rdzv_backend c10d needs --rdzv_endpoint HOST[:PORT] (the same on every node, e.g. "
        "node0:29400)");
  CHECK_THAT(usage_error({"x"}, {{"PET_RDZV_BACKEND", "c10d"}}),
             StartsWith("PET_RDZV_BACKEND=c10d needs --rdzv_endpoint HOST[:PORT]"));
  CHECK_THAT(usage_error({"--rdzv-backend", "etcd", "x"}),
             StartsWith("--rdzv-backend: rendezvous backend etcd is not supported; use c10d"));

  Options o = launch(c10d({"--nnodes", "2", "--node_rank", "5"}));
  CHECK(o.rdzv_backend == gangrun::config::RendezvousBackend::c10d);
  CHECK_THAT(usage_error({"--nnodes", "2", "--node_rank", "5", "x"}),
             StartsWith("--node_rank: 5 is not a node rank for --nnodes 2"));
}

TEST_CASE("config::parse_command_line: --standalone stays a single static node",
          "[config][rendezvous]") {
  Options o = launch({"--standalone", "--rdzv_backend", "c10d", "x"});
  CHECK(o.standalone);
  CHECK(o.rdzv_backend == gangrun::config::RendezvousBackend::static_ranks);
  CHECK_FALSE(o.rdzv_endpoint);
  Options with_endpoint =
      launch({"--standalone", "--rdzv_backend", "c10d", "--rdzv_endpoint", "node0:1234", "x"});
  CHECK(with_endpoint.rdzv_backend == gangrun::config::RendezvousBackend::static_ranks);
  CHECK_FALSE(with_endpoint.rdzv_endpoint);
  CHECK_FALSE(with_endpoint.master_port);
  CHECK_THAT(usage_error({"--standalone", "--rdzv_backend", "c10d", "--nnodes", "1:2", "x"}),
             StartsWith("--standalone runs on a single node"));
}

TEST_CASE("config::parse_command_line: the static backend's master comes from the endpoint",
          "[config][rendezvous]") {
  Options o = launch({"--rdzv_endpoint", "node7:1234", "x"});
  CHECK(o.rdzv_backend == gangrun::config::RendezvousBackend::static_ranks);
  CHECK(o.master_addr == "node7");
  CHECK(o.master_port == 1234);
  CHECK(o.origins.at("master_addr").text == "node7 (from --rdzv_endpoint node7:1234)");
  CHECK(o.origins.at("master_addr").source == Source::command_line);
  CHECK(o.origins.at("master_port").text == "1234 (from --rdzv_endpoint node7:1234)");

  Options v6 = launch({"--rdzv-endpoint", "[::1]", "x"});
  CHECK(v6.master_addr == "::1");
  CHECK(v6.master_port == 29400);

  // --master_addr/--master_port, from any layer, win over the endpoint.
  Options own = launch({"--rdzv_endpoint", "node7:1234", "--master_addr", "node9", "x"},
                       {{"PET_MASTER_PORT", "2222"}});
  CHECK(own.master_addr == "node9");
  CHECK(own.master_port == 2222);
  CHECK(own.origins.at("master_port").source == Source::pet_env);

  // c10d leaves the master alone: its store is at the endpoint.
  Options dynamic = launch(c10d({}));
  CHECK_FALSE(dynamic.master_addr);
  CHECK_FALSE(dynamic.master_port);
}

TEST_CASE("config::parse_command_line reads the rendezvous options in both spellings",
          "[config][rendezvous]") {
  for (const char* spelling : {"--rdzv_conf", "--rdzv-conf"}) {
    Options o = launch(c10d({spelling, "timeout=30,is_host=true"}));
    CHECK(o.rdzv_conf.join_timeout == 30);
    CHECK(o.rdzv_conf.is_host == true);
  }
  for (const char* spelling : {"--local_addr", "--local-addr"}) {
    CHECK(launch(c10d({spelling, "10.1.2.3"})).local_addr == "10.1.2.3");
  }
  CHECK(launch({"--rdzv-backend=c10d", "--rdzv-endpoint=node1:80", "x"}).rdzv_endpoint ==
        Endpoint{"node1", 80});
  CHECK_FALSE(launch({"x"}).local_addr);
  CHECK(launch({"x"}).rdzv_conf == RendezvousConf{});

  CHECK_THAT(usage_error(c10d({"--rdzv_endpoint", "node0:99999"})),
             StartsWith("--rdzv_endpoint: 'node0:99999' is not a rendezvous endpoint"));
  CHECK_THAT(usage_error(c10d({"--rdzv-conf", "bogus=1"})),
             StartsWith("--rdzv-conf: 'bogus' in 'bogus=1' is not a rendezvous setting"));
  CHECK_THAT(usage_error(c10d({"--local_addr", " "})), StartsWith("--local_addr: empty value"));
}

TEST_CASE("config::parse_command_line layers the rendezvous options from the environment",
          "[config][rendezvous]") {
  Options o = launch({"x"}, {{"PET_RDZV_BACKEND", "c10d"},
                             {"PET_RDZV_ENDPOINT", "pet-node:1111"},
                             {"PET_NNODES", "2:3"},
                             {"PET_RDZV_CONF", "join_timeout=60"},
                             {"PET_LOCAL_ADDR", "10.0.0.2"}});
  CHECK(o.rdzv_backend == gangrun::config::RendezvousBackend::c10d);
  CHECK(o.rdzv_endpoint == Endpoint{"pet-node", 1111});
  CHECK(o.min_nnodes == 2);
  CHECK(o.nnodes == 3);
  CHECK(o.rdzv_conf.join_timeout == 60);
  CHECK(o.local_addr == "10.0.0.2");
  CHECK(o.origins.at("rdzv_endpoint").source == Source::pet_env);

  // GANGRUN_ beats PET_, and the command line beats both.
  Options layered = launch({"--rdzv_conf", "read_timeout=9", "x"},
                           {{"PET_RDZV_BACKEND", "c10d"},
                            {"PET_RDZV_ENDPOINT", "pet-node"},
                            {"GANGRUN_RDZV_ENDPOINT", "gangrun-node:2222"},
                            {"PET_LOCAL_ADDR", "pet-addr"},
                            {"GANGRUN_LOCAL_ADDR", "gangrun-addr"},
                            {"GANGRUN_RDZV_CONF", "read_timeout=1"}});
  CHECK(layered.rdzv_endpoint == Endpoint{"gangrun-node", 2222});
  CHECK(layered.origins.at("rdzv_endpoint").source == Source::gangrun_env);
  CHECK(layered.local_addr == "gangrun-addr");
  CHECK(layered.rdzv_conf.read_timeout == 9);
  CHECK(layered.origins.at("rdzv_conf").source == Source::command_line);

  CHECK_THAT(usage_error({"x"}, {{"PET_RDZV_ENDPOINT", "a:b:c"}}),
             StartsWith("PET_RDZV_ENDPOINT: 'a:b:c' is not a rendezvous endpoint"));
  CHECK_THAT(usage_error({"x"}, {{"GANGRUN_RDZV_CONF", "is_host"}}),
             StartsWith("GANGRUN_RDZV_CONF: 'is_host' in 'is_host' is not KEY=VALUE"));
  // Static, from the environment as well: PET_RDZV_ENDPOINT gives the master.
  Options master = launch({"x"}, {{"PET_RDZV_ENDPOINT", "pet-node:3333"}});
  CHECK(master.master_addr == "pet-node");
  CHECK(master.master_port == 3333);
  CHECK(master.origins.at("master_port").text == "3333 (from PET_RDZV_ENDPOINT=pet-node:3333)");
}
