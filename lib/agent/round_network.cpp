#include "agent/round_network.hpp"

#include "store/default_port.hpp"
#include "util/host.hpp"

#include <spdlog/spdlog.h>

namespace gangrun::agent {

EnvMap RoundNetwork::decide(const launch::LaunchPlan& plan, std::uint64_t round,
                            const std::optional<store::AsyncClient::Ends>& ends,
                            const std::vector<launch::NetworkInterface>& interfaces,
                            const std::optional<std::string>& reached_here) {
  const int port = plan.master_port.value_or(store::k_default_port);
  launch::NetworkChoice choice;
  if (ends && reached_here && launch::is_loopback_address(ends->local_address)) {
    choice = launch::choose_network_interface(
        interfaces, *reached_here, "the address the other nodes reached this node's store at",
        plan.host_env);
  } else if (ends) {
    choice = launch::choose_network_interface(
        interfaces, ends->local_address,
        launch::toward_store_text(host::endpoint_text(ends->store_address, port)), plan.host_env);
  } else {
    choice.message = "network: this node's address toward the store is not known; nothing set";
  }
  if (choice.message == last_message_) {
    spdlog::debug("round {}: {}", round, choice.message);
  } else if (last_message_.empty()) {
    spdlog::info("round {}: {}", round, choice.message);
  } else {
    spdlog::info("round {}: {} (changed since the last round)", round, choice.message);
  }
  last_message_ = choice.message;
  return choice.variables;
}

}  // namespace gangrun::agent
