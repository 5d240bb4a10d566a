#include "launch/network_plan.hpp"

#include "config/option_names.hpp"
#include "launch/job_plan.hpp"
#include "launch/job_secret.hpp"
#include "store/default_port.hpp"

namespace gangrun::launch {
namespace {

// Where the store's port came from, for messages: the option as the user
// spelled it, which an accelerate or deepspeed user knows by another name.
std::string master_port_origin(const config::Options& options, bool c10d) {
  if (c10d) return "--rdzv_endpoint";
  const config::Options::Origin* given = options.user_origin(config::opt::master_port);
  if (given == nullptr || given->where.empty()) return "--master_port";
  return given->where;
}

}  // namespace

Expected<void> plan_network(const config::Options& options, const EnvMap& host_env,
                            LaunchPlan& plan) {
  plan.local_addr = options.local_addr;
  plan.rendezvous = options.rdzv_conf;
  plan.store_limits = {.max_connections = options.max_connections,
                       .max_connections_per_address = options.max_connections_per_address,
                       .max_total_bytes = options.max_store_bytes,
                       .max_bytes_per_address = options.max_store_bytes_per_address};
  plan.master_addr = options.master_addr.value_or("127.0.0.1");
  plan.master_port = options.master_port;
  plan.c10d = options.rdzv_backend == config::RendezvousBackend::c10d;
  plan.min_nnodes = options.min_nnodes;
  plan.multi_node = plan.c10d || plan.nnodes > 1;
  if (plan.c10d && options.rdzv_endpoint) {
    // Agents and workers meet in the one store on the endpoint.
    plan.master_addr = options.rdzv_endpoint->host;
    plan.master_port = options.rdzv_endpoint->port;
  }
  plan.master_addr_origin = master_addr_origin(options, plan.c10d);
  plan.master_port_origin = master_port_origin(options, plan.c10d);
  if (!plan.master_port && plan.multi_node) plan.master_port = store::k_default_port;
  remove_job_secret(plan.host_env);
  if (plan.multi_node) {
    GANGRUN_TRY_ASSIGN(secret, read_job_secret(host_env));
    if (*secret) plan.job_secret = std::move((*secret)->value);
  }
  return {};
}

}  // namespace gangrun::launch
