// `gangrun store ...` parsing: the dispatch from parse_command_line, every
// subcommand's arguments, endpoint forms and their defaults from the
// environment, and the usage errors a user can hit.
#include "config/cli.hpp"
#include "config/store_cli.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using gangrun::EnvMap;
using gangrun::ErrorCode;
using gangrun::Expected;
using gangrun::config::Command;
using gangrun::config::parse_endpoint;
using gangrun::config::parse_store_command;
using gangrun::config::StoreAction;
using gangrun::config::StoreCommand;
using gangrun::config::StoreDialect;
using gangrun::config::test::parse;
using std::chrono::milliseconds;

StoreCommand store(const std::vector<std::string>& args, const EnvMap& env = {}) {
  Expected<StoreCommand> command = parse_store_command(args, env);
  if (!command) FAIL("unexpected error: " << command.error().message());
  return *command;
}

std::string store_error(const std::vector<std::string>& args, const EnvMap& env = {}) {
  Expected<StoreCommand> command = parse_store_command(args, env);
  if (command) FAIL("expected a usage error");
  CHECK(command.error().code() == ErrorCode::usage);
  return command.error().message();
}

}  // namespace

TEST_CASE("config: 'gangrun store' is a subcommand only as the first word", "[config][store]") {
  Expected<Command> command = parse({"store", "get", "k"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::StoreRequest>(*command));
  CHECK(std::get<gangrun::config::StoreRequest>(*command).store.action == StoreAction::get);
  CHECK(std::get<gangrun::config::StoreRequest>(*command).store.keys ==
        std::vector<std::string>{"k"});

  command = parse({"--", "store", "get"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::LaunchRequest>(*command));
  CHECK(std::get<gangrun::config::LaunchRequest>(*command).options.program_and_args ==
        std::vector<std::string>{"store", "get"});

  command = parse({"--nproc_per_node", "2", "store"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::LaunchRequest>(*command));
  CHECK(std::get<gangrun::config::LaunchRequest>(*command).options.program_and_args ==
        std::vector<std::string>{"store"});
}

TEST_CASE("config: store --help and <command> --help give help text", "[config][store]") {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"store", "--help"}, std::vector<std::string>{"store", "-h"}}) {
    Expected<Command> command = parse(args);
    REQUIRE(command);
    CHECK(std::holds_alternative<gangrun::config::TextOutput>(*command));
    CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("num-keys"));
    CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("--endpoint"));
    CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("Exit status"));
  }
  Expected<Command> command = parse({"store", "serve", "--help"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::TextOutput>(*command));
  CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("--port-file"));
  CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("--max-value-bytes"));

  command = parse({"store", "get", "--help"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::TextOutput>(*command));
  CHECK_THAT(std::get<gangrun::config::TextOutput>(*command).text, Contains("store get"));
}

TEST_CASE("config: store client commands and their arguments", "[config][store]") {
  StoreCommand c = store({"get", "k"});
  CHECK(c.action == StoreAction::get);
  CHECK(c.client.host == "127.0.0.1");
  CHECK(c.client.port == 29500);
  CHECK(c.client.timeout == milliseconds(300000));
  CHECK(c.client.dialect == StoreDialect::validated);
  CHECK_FALSE(c.client.raw_keys);

  c = store({"set", "k", "v"});
  CHECK(c.action == StoreAction::set);
  CHECK(c.keys == std::vector<std::string>{"k"});
  CHECK(c.value == "v");
  c = store({"set", "k"});
  CHECK_FALSE(c.value);  // standard input
  c = store({"set", "k", ""});
  CHECK(c.value == "");
  c = store({"set", "k", "-x"});
  CHECK(c.value == "-x");
  c = store({"set", "k", "--", "--looks-like-an-option"});
  CHECK(c.value == "--looks-like-an-option");

  c = store({"add", "n"});
  CHECK(c.action == StoreAction::add);
  CHECK(c.delta == 1);
  CHECK(store({"add", "n", "7"}).delta == 7);
  CHECK(store({"add", "n", "-5"}).delta == -5);

  c = store({"wait", "a", "b", "c"});
  CHECK(c.action == StoreAction::wait);
  CHECK(c.keys == std::vector<std::string>{"a", "b", "c"});
  c = store({"check", "a"});
  CHECK(c.action == StoreAction::check);
  CHECK(store({"delete", "a"}).action == StoreAction::delete_key);
  CHECK(store({"keys"}).action == StoreAction::keys);
  CHECK(store({"num-keys"}).action == StoreAction::num_keys);
  CHECK(store({"num_keys"}).action == StoreAction::num_keys);
}

TEST_CASE("config: store client options go before or after the command", "[config][store]") {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--endpoint", "h:1", "--timeout", "2.5", "--dialect", "legacy",
                                 "--raw-keys", "get", "k"},
        std::vector<std::string>{"get", "k", "--endpoint=h:1", "--timeout=2.5", "--dialect=legacy",
                                 "--raw_keys"},
        std::vector<std::string>{"get", "--timeout", "9", "--endpoint", "x:2", "k", "--timeout",
                                 "2.5", "--endpoint", "h:1", "--dialect", "LEGACY",
                                 "--raw-keys"}}) {
    CAPTURE(args);
    StoreCommand c = store(args);
    CHECK(c.client.host == "h");
    CHECK(c.client.port == 1);
    CHECK(c.client.timeout == milliseconds(2500));
    CHECK(c.client.dialect == StoreDialect::legacy);
    CHECK(c.client.raw_keys);
    CHECK(c.keys == std::vector<std::string>{"k"});
  }
  CHECK(store({"get", "k", "--timeout", "0.0001"}).client.timeout == milliseconds(1));
}

TEST_CASE("config: store endpoint forms", "[config][store]") {
  auto endpoint = [](const std::string& text) {
    auto parsed = parse_endpoint(text, "--endpoint");
    if (!parsed) FAIL(parsed.error().message());
    return std::make_pair(parsed->host, parsed->port);
  };
  CHECK(endpoint("10.0.0.1:1234") == std::make_pair(std::string("10.0.0.1"), 1234));
  CHECK(endpoint("node-7.cluster:29400") == std::make_pair(std::string("node-7.cluster"), 29400));
  CHECK(endpoint("node-7") == std::make_pair(std::string("node-7"), 29500));
  CHECK(endpoint("[::1]:5") == std::make_pair(std::string("::1"), 5));
  CHECK(endpoint("[fe80::1%eth0]:29501") == std::make_pair(std::string("fe80::1%eth0"), 29501));
  CHECK(endpoint("[::1]") == std::make_pair(std::string("::1"), 29500));

  CHECK_THAT(store_error({"get", "k", "--endpoint", "h:0"}), Contains("--endpoint"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "h:65536"}), Contains("not a port number"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "h:http"}), Contains("'http'"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", ":5"}), Contains("no host"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "::1:5"}), Contains("[ADDR]:PORT"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "[::1:5"}), Contains("--endpoint"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "[::1]5"}), Contains("--endpoint"));
  CHECK_THAT(store_error({"get", "k", "--endpoint", "[]:5"}), Contains("--endpoint"));
}

TEST_CASE("config: the store endpoint defaults come from the environment", "[config][store]") {
  StoreCommand c =
      store({"num-keys"},
            {{"GANGRUN_STORE_ENDPOINT", "[::1]:7"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "8"}});
  CHECK(c.client.host == "::1");
  CHECK(c.client.port == 7);

  c = store({"num-keys"}, {{"MASTER_ADDR", "m"}, {"MASTER_PORT", "8"}});
  CHECK(c.client.host == "m");
  CHECK(c.client.port == 8);
  c = store({"num-keys"}, {{"MASTER_ADDR", "m"}});
  CHECK(c.client.host == "m");
  CHECK(c.client.port == 29500);
  c = store({"num-keys"}, {{"MASTER_PORT", "8"}});
  CHECK(c.client.host == "127.0.0.1");
  CHECK(c.client.port == 8);

  c = store({"num-keys", "--endpoint", "h:1"}, {{"GANGRUN_STORE_ENDPOINT", "bad:bad"}});
  CHECK(c.client.host == "h");

  CHECK_THAT(store_error({"num-keys"}, {{"GANGRUN_STORE_ENDPOINT", "h:x"}}),
             Contains("GANGRUN_STORE_ENDPOINT"));
  CHECK_THAT(store_error({"num-keys"}, {{"MASTER_PORT", "99999"}}), Contains("MASTER_PORT"));
}

TEST_CASE("config: store serve options", "[config][store]") {
  StoreCommand c = store({"serve"});
  CHECK(c.action == StoreAction::serve);
  CHECK(c.serve.host == "127.0.0.1");
  CHECK(c.serve.port == 29500);
  CHECK(c.serve.port_file.empty());
  CHECK_FALSE(c.serve.max_key_bytes);
  CHECK_FALSE(c.serve.max_connections);

  c = store({"serve", "--host", "::", "--port", "0", "--port-file", "/tmp/p", "--max-key-bytes",
             "100", "--max_value_bytes", "2000", "--max-keys-per-request", "3", "--max-store-bytes",
             "40000", "--max-connections", "5"});
  CHECK(c.serve.host == "::");
  CHECK(c.serve.port == 0);
  CHECK(c.serve.port_file == "/tmp/p");
  CHECK(c.serve.max_key_bytes == 100u);
  CHECK(c.serve.max_value_bytes == 2000u);
  CHECK(c.serve.max_keys_per_request == 3u);
  CHECK(c.serve.max_store_bytes == 40000u);
  CHECK(c.serve.max_connections == 5u);
  CHECK(store({"serve", "--host", "[::1]"}).serve.host == "::1");

  CHECK_THAT(store_error({"serve", "--port", "-1"}), Contains("--port"));
  CHECK_THAT(store_error({"serve", "--port", "65536"}), Contains("--port"));
  CHECK_THAT(store_error({"serve", "--max-key-bytes", "0"}), Contains("--max-key-bytes"));
  CHECK_THAT(store_error({"serve", "--max-connections", "many"}), Contains("--max-connections"));
  CHECK_THAT(store_error({"serve", "--host", ""}), Contains("--host"));
  CHECK_THAT(store_error({"serve", "--endpoint", "h:1"}), Contains("--endpoint"));
  CHECK_THAT(store_error({"--timeout", "3", "serve"}), Contains("--timeout"));
}

TEST_CASE("config: store usage errors name what is wrong", "[config][store]") {
  CHECK_THAT(store_error({}), Contains("missing command"));
  CHECK_THAT(store_error({"gte", "k"}), Contains("unknown command 'gte'; did you mean get?"));
  CHECK_THAT(store_error({"numkeys"}), Contains("did you mean num-keys?"));
  CHECK_THAT(store_error({"frobnicate"}), Contains("unknown command 'frobnicate'"));
  CHECK_THAT(store_error({"get"}), Contains("KEY"));
  CHECK_THAT(store_error({"get", "a", "b"}), Contains("unexpected argument 'b'"));
  CHECK_THAT(store_error({"wait"}), Contains("KEY"));
  CHECK_THAT(store_error({"get", "k", "--endpont", "h:1"}),
             Contains("unknown option '--endpont'; did you mean --endpoint?"));
  CHECK_THAT(store_error({"get", "k", "--timeout"}), Contains("--timeout"));
  CHECK_THAT(store_error({"get", "k", "--timeout", "0"}), Contains("--timeout"));
  CHECK_THAT(store_error({"get", "k", "--timeout", "-3"}), Contains("--timeout"));
  CHECK_THAT(store_error({"get", "k", "--timeout", "soon"}), Contains("--timeout"));
  CHECK_THAT(store_error({"get", "k", "--timeout", "inf"}), Contains("--timeout"));
  CHECK_THAT(store_error({"get", "k", "--dialect", "1.13"}), Contains("--dialect"));
  CHECK_THAT(store_error({"add", "n", "x"}), Contains("DELTA"));
  CHECK_THAT(store_error({"add", "n", "1.5"}), Contains("DELTA"));
  CHECK_THAT(store_error({"keys", "--dialect", "legacy"}), Contains("validated"));
  CHECK_THAT(store_error({"set", "k", "v", "extra"}), Contains("'extra'"));
  CHECK_THAT(store_error({"num-keys", "--port", "1"}), Contains("--port"));
}
