#include "agent/round_start.hpp"

#include "agent/launches.hpp"
#include "agent/rendezvous_setup.hpp"

namespace gangrun::agent {

supervise::GangSettings gang_settings(const launch::LaunchPlan& plan) {
  supervise::GangSettings settings;
  settings.term_timeout = from_seconds(plan.term_timeout_s);
  settings.failure_window = from_seconds(plan.failure_window_s);
  if (plan.multi_node && settings.failure_window.count() > 0) {
    const config::RendezvousConf& conf = plan.rendezvous;
    settings.failure_window += from_seconds(conf.keep_alive_interval * conf.keep_alive_max_attempt);
  }
  return settings;
}

std::vector<supervise::WorkerLaunch> round_launches(const launch::LaunchPlan& plan,
                                                    const launch::RoundAssignment& round,
                                                    const std::string& run_dir,
                                                    const EnvMap& doctor_env,
                                                    const EnvMap& network_env) {
  std::vector<supervise::WorkerLaunch> launches = make_launches(plan, round, run_dir);
  for (const EnvMap* added : {&doctor_env, &network_env}) {
    for (const auto& [name, value] : *added) {
      for (supervise::WorkerLaunch& launch : launches) launch.spawn.env[name] = value;
    }
  }
  return launches;
}

std::string round_store_endpoint(const launch::RoundAssignment& round) {
  return round.master_port.empty() ? "" : round.master_addr + ":" + round.master_port;
}

}  // namespace gangrun::agent
