#include "launch/network_interface.hpp"

#include "util/host.hpp"
#include "util/strings.hpp"

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>

#include <array>

namespace gangrun::launch {
namespace {

// The address as one form: no scope id, an IPv4-mapped IPv6 address as IPv4.
// nullopt when text is no address.
std::optional<boost::asio::ip::address> parsed(const std::string& text) {
  std::string bare = text.substr(0, text.find('%'));
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  boost::system::error_code error;
  boost::asio::ip::address address = boost::asio::ip::make_address(bare, error);
  if (error) return std::nullopt;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  }
  return address;
}

// The value each variable gets for the interface.
std::string value_for(const std::string& variable, const std::string& interface) {
  return variable == "NCCL_SOCKET_IFNAME" ? "=" + interface : interface;
}

// "GLOO_SOCKET_IFNAME left as set by the user (eth0)", one clause per variable.
std::vector<std::string> users_own(const EnvMap& user_env) {
  std::vector<std::string> kept;
  for (const std::string& variable : interface_variables()) {
    if (auto value = env_lookup(user_env, variable)) {
      kept.push_back(fmt::format("{} left as set by the user ({})", variable, *value));
    }
  }
  return kept;
}

std::string unset_list(const EnvMap& user_env) {
  std::vector<std::string> names;
  for (const std::string& variable : interface_variables()) {
    if (!env_lookup(user_env, variable)) names.push_back(variable);
  }
  return strings::join(names, ", ");
}

// "; NCCL_SOCKET_IFNAME left as set by the user (ib0)", or "".
std::string kept_suffix(const EnvMap& user_env) {
  std::vector<std::string> kept = users_own(user_env);
  return kept.empty() ? "" : "; " + strings::join(kept, "; ");
}

}  // namespace

const std::vector<std::string>& interface_variables() {
  static const std::vector<std::string> names = {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
                                                 "TP_SOCKET_IFNAME"};
  return names;
}

std::optional<NetworkInterface> interface_holding(const std::vector<NetworkInterface>& interfaces,
                                                  const std::string& address) {
  auto wanted = parsed(address);
  if (!wanted) return std::nullopt;
  for (const NetworkInterface& interface : interfaces) {
    if (parsed(interface.address) == wanted) return interface;
  }
  return std::nullopt;
}

bool is_loopback_address(const std::string& text) {
  auto address = parsed(text);
  return address && address->is_loopback();
}

std::string toward_store_text(const std::string& store_where) {
  return "this node's address toward the store at " + store_where;
}

NetworkChoice choose_network_interface(const std::vector<NetworkInterface>& interfaces,
                                       const std::string& local_address, const std::string& toward,
                                       const EnvMap& user_env) {
  NetworkChoice choice;
  std::string unset = unset_list(user_env);
  if (unset.empty()) {
    choice.message = "network: " + strings::join(users_own(user_env), "; ");
    return choice;
  }
  std::optional<NetworkInterface> holder = interface_holding(interfaces, local_address);
  if (!holder) {
    choice.message = fmt::format(
        "network: no interface holds {}, {}; {} not set, the libraries choose for "
        "themselves{}",
        local_address, toward, unset, kept_suffix(user_env));
    return choice;
  }
  if (holder->loopback || is_loopback_address(local_address)) {
    choice.message = fmt::format(
        "network: this node reaches the store through loopback ({} holds {}); {} not set "
        "(nodes on other machines reach the store at another address){}",
        holder->name, local_address, unset, kept_suffix(user_env));
    return choice;
  }
  choice.interface = holder->name;
  std::vector<std::string> set;
  for (const std::string& variable : interface_variables()) {
    if (env_lookup(user_env, variable)) continue;
    choice.variables[variable] = value_for(variable, holder->name);
    set.push_back(variable + "=" + choice.variables[variable]);
  }
  choice.message = fmt::format("network: {} ({} holds {}, {}){}", strings::join(set, " "),
                               holder->name, local_address, toward, kept_suffix(user_env));
  if (!holder->up) choice.message += fmt::format(" (though {} is down)", holder->name);
  return choice;
}

std::vector<NetworkInterface> list_network_interfaces() {
  std::vector<NetworkInterface> interfaces;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return interfaces;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_name == nullptr) continue;
    int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::array<char, NI_MAXHOST> host{};
    if (::getnameinfo(entry->ifa_addr, length, host.data(), host.size(), nullptr, 0,
                      NI_NUMERICHOST) != 0) {
      continue;
    }
    std::string address = host.data();
    interfaces.push_back(NetworkInterface{.name = entry->ifa_name,
                                          .address = address.substr(0, address.find('%')),
                                          .loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0,
                                          .up = (entry->ifa_flags & IFF_UP) != 0});
  }
  ::freeifaddrs(list);
  return interfaces;
}

std::string planned_network_text(const LaunchPlan& plan,
                                 const std::vector<NetworkInterface>& interfaces) {
  if (!plan.multi_node) return "";
  std::string where = host::endpoint_text(
      plan.master_addr, plan.master_port ? std::to_string(*plan.master_port) : "?");
  std::string unset = unset_list(plan.host_env);
  if (unset.empty()) return "network: " + strings::join(users_own(plan.host_env), "; ");
  std::optional<NetworkInterface> own = interface_holding(interfaces, plan.master_addr);
  if (!plan.c10d && plan.node_rank == 0 && own && !own->loopback) {
    NetworkChoice choice =
        choose_network_interface(interfaces, own->address, toward_store_text(where), plan.host_env);
    return choice.message;
  }
  return fmt::format(
      "network: {} decided when each round starts: the interface holding this node's address "
      "toward the store at {} (the local end of its connection){}",
      unset, where, kept_suffix(plan.host_env));
}

}  // namespace gangrun::launch
