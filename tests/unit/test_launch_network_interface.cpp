// Which interface a node's workers are told to use (launch/network_interface.hpp):
// the one holding the node's address toward the store, among decoys that
// come first; the user's own settings win; nothing is set when no interface
// holds the address or it is loopback. And the agent's per-round decision
// (agent/round_network.hpp), which notices an address that moved or vanished.
#include "agent/round_network.hpp"
#include "launch/network_interface.hpp"

#include <catch2/catch.hpp>

using gangrun::EnvMap;
using gangrun::agent::RoundNetwork;
using gangrun::launch::choose_network_interface;
using gangrun::launch::interface_holding;
using gangrun::launch::NetworkInterface;
using gangrun::launch::toward_store_text;

namespace {

// What `ip addr` of a typical node lists first: loopback, docker's bridge,
// a container's veth, then the interface that leads to the other nodes.
std::vector<NetworkInterface> node_interfaces(const std::string& real_name) {
  return {
      {.name = "lo", .address = "127.0.0.1", .loopback = true, .up = true},
      {.name = "lo", .address = "::1", .loopback = true, .up = true},
      {.name = "docker0", .address = "172.17.0.1", .loopback = false, .up = true},
      {.name = "veth1a2b", .address = "fe80::1c2d:3eff:fe4f:5a6b", .loopback = false, .up = true},
      {.name = real_name, .address = "10.200.3.2", .loopback = false, .up = true},
      {.name = real_name, .address = "fd00::3:2", .loopback = false, .up = true},
  };
}

}  // namespace

TEST_CASE("network interface: the one holding the address toward the store, past the decoys",
          "[network]") {
  auto choice = choose_network_interface(node_interfaces("eth1"), "10.200.3.2",
                                         toward_store_text("10.200.3.1:29500"), {});
  CHECK(choice.interface == "eth1");
  CHECK(choice.variables == EnvMap{{"GLOO_SOCKET_IFNAME", "eth1"},
                                   {"NCCL_SOCKET_IFNAME", "=eth1"},
                                   {"TP_SOCKET_IFNAME", "eth1"}});
  CHECK(choice.message ==
        "network: GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME==eth1 TP_SOCKET_IFNAME=eth1 (eth1 "
        "holds 10.200.3.2, this node's address toward the store at 10.200.3.1:29500)");
}

TEST_CASE("network interface: each node names its own interface", "[network]") {
  auto here =
      choose_network_interface(node_interfaces("eno1"), "10.200.3.2", toward_store_text("s:1"), {});
  auto there =
      choose_network_interface(node_interfaces("eth0"), "10.200.3.2", toward_store_text("s:1"), {});
  CHECK(here.variables.at("GLOO_SOCKET_IFNAME") == "eno1");
  CHECK(there.variables.at("GLOO_SOCKET_IFNAME") == "eth0");
}

TEST_CASE("network interface: IPv6 addresses, a scope id and IPv4-mapped ones", "[network]") {
  auto interfaces = node_interfaces("ens5");
  CHECK(choose_network_interface(interfaces, "fd00::3:2", toward_store_text("[fd00::1]:29500"), {})
            .interface == "ens5");
  CHECK(
      choose_network_interface(interfaces, "fd00:0:0::3:2", toward_store_text("x"), {}).interface ==
      "ens5");
  CHECK(interface_holding(interfaces, "::ffff:10.200.3.2")->name == "ens5");
  CHECK(interface_holding(interfaces, "fe80::1c2d:3eff:fe4f:5a6b%veth1a2b")->name == "veth1a2b");
  CHECK_FALSE(interface_holding(interfaces, "not an address"));
}

TEST_CASE("network interface: the user's own setting wins, the others are still set", "[network]") {
  EnvMap user = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  auto choice = choose_network_interface(node_interfaces("eth1"), "10.200.3.2",
                                         toward_store_text("s:1"), user);
  CHECK(choice.variables == EnvMap{{"GLOO_SOCKET_IFNAME", "eth1"}, {"TP_SOCKET_IFNAME", "eth1"}});
  CHECK_THAT(choice.message,
             Catch::Contains("GLOO_SOCKET_IFNAME=eth1 TP_SOCKET_IFNAME=eth1 (eth1 holds") &&
                 Catch::EndsWith("; NCCL_SOCKET_IFNAME left as set by the user (ib0)"));
}

TEST_CASE("network interface: every variable the user's, nothing set", "[network]") {
  EnvMap user = {
      {"GLOO_SOCKET_IFNAME", "eth0"}, {"NCCL_SOCKET_IFNAME", "eth0"}, {"TP_SOCKET_IFNAME", "eth0"}};
  auto choice = choose_network_interface(node_interfaces("eth1"), "10.200.3.2",
                                         toward_store_text("s:1"), user);
  CHECK(choice.variables.empty());
  CHECK(choice.message ==
        "network: GLOO_SOCKET_IFNAME left as set by the user (eth0); NCCL_SOCKET_IFNAME left as "
        "set by the user (eth0); TP_SOCKET_IFNAME left as set by the user (eth0)");
}

TEST_CASE("network interface: an address no interface holds sets nothing, and says so",
          "[network]") {
  auto choice = choose_network_interface(node_interfaces("eth1"), "10.9.9.9",
                                         toward_store_text("10.200.3.1:29500"), {});
  CHECK(choice.variables.empty());
  CHECK(choice.interface.empty());
  CHECK(choice.message ==
        "network: no interface holds 10.9.9.9, this node's address toward the store at "
        "10.200.3.1:29500; GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, TP_SOCKET_IFNAME not set, the "
        "libraries choose for themselves");
}

TEST_CASE("network interface: loopback toward the store sets nothing", "[network]") {
  for (const char* address : {"127.0.0.1", "::1"}) {
    auto choice =
        choose_network_interface(node_interfaces("eth1"), address, toward_store_text("s:1"), {});
    CHECK(choice.variables.empty());
    CHECK_THAT(choice.message, Catch::StartsWith("network: this node reaches the store through "
                                                 "loopback (lo holds"));
  }
  // Debian's host name address, on lo but not in the list getifaddrs gives
  // (it is 127.0.0.0/8 of lo): no interface holds it.
  auto debian =
      choose_network_interface(node_interfaces("eth1"), "127.0.1.1", toward_store_text("s:1"), {});
  CHECK(debian.variables.empty());
}

TEST_CASE(
    "network interface: decided again each round, a change said and an address gone "
    "sets nothing",
    "[network]") {
  gangrun::launch::LaunchPlan plan;
  plan.multi_node = true;
  plan.master_port = 29500;
  RoundNetwork network;
  using Ends = gangrun::store::AsyncClient::Ends;
  auto first =
      network.decide(plan, 0, Ends{.local_address = "10.200.3.2", .store_address = "10.200.3.1"},
                     node_interfaces("eth1"));
  CHECK(first.at("GLOO_SOCKET_IFNAME") == "eth1");
  CHECK_THAT(network.last_message(), Catch::Contains("store at 10.200.3.1:29500"));
  // The address moved to another interface between rounds.
  auto moved =
      network.decide(plan, 1, Ends{.local_address = "10.200.3.2", .store_address = "10.200.3.1"},
                     node_interfaces("eth2"));
  CHECK(moved.at("GLOO_SOCKET_IFNAME") == "eth2");
  // The interface is gone: nothing set, and the workers choose for themselves.
  std::vector<NetworkInterface> without = node_interfaces("eth2");
  without.resize(4);
  auto gone = network.decide(
      plan, 2, Ends{.local_address = "10.200.3.2", .store_address = "10.200.3.1"}, without);
  CHECK(gone.empty());
  CHECK_THAT(network.last_message(), Catch::StartsWith("network: no interface holds 10.200.3.2"));
  // IPv6 store addresses are written in brackets.
  network.decide(plan, 3, Ends{.local_address = "fd00::3:2", .store_address = "fd00::1"},
                 node_interfaces("eth1"));
  CHECK_THAT(network.last_message(), Catch::Contains("store at [fd00::1]:29500"));
  // The store's host reaches its own store through loopback (its master
  // address is its name, on 127.0.1.1 here): the address the others reached
  // it at decides.
  auto host =
      network.decide(plan, 5, Ends{.local_address = "127.0.1.1", .store_address = "127.0.1.1"},
                     node_interfaces("eth1"), std::string("10.200.3.2"));
  CHECK(host.at("GLOO_SOCKET_IFNAME") == "eth1");
  CHECK_THAT(network.last_message(),
             Catch::EndsWith("(eth1 holds 10.200.3.2, the address the other nodes reached this "
                             "node's store at)"));
  // Without that address, loopback sets nothing.
  CHECK(network
            .decide(plan, 6, Ends{.local_address = "127.0.1.1", .store_address = "127.0.1.1"},
                    node_interfaces("eth1"))
            .empty());
  // Never connected: nothing known, nothing set.
  CHECK(network.decide(plan, 4, std::nullopt, node_interfaces("eth1")).empty());
}

TEST_CASE("network interface: this host's list has loopback", "[network]") {
  auto interfaces = gangrun::launch::list_network_interfaces();
  auto lo = interface_holding(interfaces, "127.0.0.1");
  REQUIRE(lo);
  CHECK(lo->loopback);
}
