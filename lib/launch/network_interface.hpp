// Which network interface a node's workers talk through, decided per node
// and per round. Left alone, gloo and NCCL pick an interface of their own:
// the host name's address (Debian's 127.0.1.1), or the first interface that
// is up (docker0, a veth), which may lead nowhere; and one
// NCCL_SOCKET_IFNAME for every node fails where the names differ (eno1
// here, eth0 there). The address that certainly leads to the others is the
// one this node's agent reaches the store from, so gangrun names the
// interface holding it in each library's variable, unless the user set it.
//
// The choice is pure (an address and a list of interfaces in, variables and
// a message out); list_network_interfaces is the one reading of the host.
#pragma once

#include "launch/plan.hpp"
#include "util/env.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::launch {

// One address of one interface, as getifaddrs lists them.
struct NetworkInterface {
  std::string name;     // "eth0"
  std::string address;  // numeric, "10.0.0.2" or "fd00::2" (no scope id)
  bool loopback = false;
  bool up = true;
};

// The variables that name an interface, and who reads them:
//   GLOO_SOCKET_IFNAME: torch's gloo process groups (1.x and 2.x);
//   NCCL_SOCKET_IFNAME: NCCL's bootstrap and socket transport; given as
//     "=NAME", NCCL's exact match (a bare name is a prefix: eth1 would
//     also match eth10);
//   TP_SOCKET_IFNAME: tensorpipe, torch.distributed.rpc's transport.
const std::vector<std::string>& interface_variables();

// What a node's workers get for the round, and why.
struct NetworkChoice {
  EnvMap variables;       // empty: nothing set by gangrun
  std::string interface;  // the chosen interface; empty when none
  std::string message;    // "network: GLOO_SOCKET_IFNAME=eth1 ... (eth1 holds ...)"
};

// local_address: this node's address that leads to the others; toward: what
// it is, for the message (toward_store_text); user_env: gangrun's
// environment, whose own settings win, each variable on its own (the others
// are still set). A loopback address or one no interface holds sets nothing
// and says so.
NetworkChoice choose_network_interface(const std::vector<NetworkInterface>& interfaces,
                                       const std::string& local_address, const std::string& toward,
                                       const EnvMap& user_env);

// "this node's address toward the store at 10.0.0.1:29500": the local end of
// the agent's own connection to the store at store_where.
std::string toward_store_text(const std::string& store_where);

// The interface holding address (compared as addresses: "::ffff:10.0.0.1"
// is 10.0.0.1); nullopt when none does.
std::optional<NetworkInterface> interface_holding(const std::vector<NetworkInterface>& interfaces,
                                                  const std::string& address);

// Whether text is a loopback address (127.0.0.0/8, ::1, or IPv4-mapped).
bool is_loopback_address(const std::string& text);

// This host's interfaces with an IPv4 or IPv6 address, in getifaddrs' order;
// empty when they cannot be read.
std::vector<NetworkInterface> list_network_interfaces();

// For --dry-run, before any connection: what the agent will decide when a
// round starts (static node 0 whose master address is its own: that
// interface). Empty on a single node, where nothing is set.
std::string planned_network_text(const LaunchPlan& plan,
                                 const std::vector<NetworkInterface>& interfaces);

}  // namespace gangrun::launch
