#include "config/option_names.hpp"
#include "launch/job_secret.hpp"
#include "launch/network_plan.hpp"

#include <catch2/catch.hpp>

#include <string>

using gangrun::config::Options;
using gangrun::config::RendezvousBackend;
using gangrun::config::Source;
using gangrun::launch::LaunchPlan;
using gangrun::launch::plan_network;

TEST_CASE("launch::plan_network: one node meets nobody, on a free port", "[launch]") {
  Options options;
  LaunchPlan plan;
  REQUIRE(plan_network(options, {}, plan));
  CHECK_FALSE(plan.multi_node);
  CHECK_FALSE(plan.c10d);
  CHECK(plan.master_addr == "127.0.0.1");
  CHECK_FALSE(plan.master_port);
  CHECK(plan.master_addr_origin == "--master_addr");
  CHECK(plan.master_port_origin == "--master_port");
}

TEST_CASE("launch::plan_network: many nodes get the default port and the secret", "[launch]") {
  Options options;
  options.nnodes = 2;
  options.max_connections = 7;
  options.origins[std::string(gangrun::config::opt::master_port)] = {
      .text = "1234", .source = Source::command_line, .where = "--main_process_port"};
  std::string secret(32, 'a');
  LaunchPlan plan;
  plan.nnodes = 2;
  const gangrun::EnvMap host_env = {{std::string(gangrun::launch::k_job_secret_variable), secret}};
  plan.host_env = host_env;
  REQUIRE(plan_network(options, host_env, plan));
  CHECK(plan.multi_node);
  CHECK(plan.master_port == 29500);
  CHECK(plan.master_port_origin == "--main_process_port");
  CHECK(plan.store_limits.max_connections == 7u);
  CHECK(plan.job_secret == secret);
  CHECK(plan.host_env.empty());  // the secret stays out of the workers' environment
}

TEST_CASE("launch::plan_network: c10d meets in the store on the endpoint", "[launch]") {
  Options options;
  options.rdzv_backend = RendezvousBackend::c10d;
  options.rdzv_endpoint = gangrun::config::Endpoint{.host = "head", .port = 4321};
  LaunchPlan plan;
  REQUIRE(plan_network(options, {}, plan));
  CHECK(plan.multi_node);
  CHECK(plan.master_addr == "head");
  CHECK(plan.master_port == 4321);
  CHECK(plan.master_addr_origin == "--rdzv_endpoint");
  CHECK(plan.master_port_origin == "--rdzv_endpoint");
}
