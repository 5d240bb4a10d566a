#include "report/node_name.hpp"

#include <catch2/catch.hpp>

using gangrun::report::node_name;

TEST_CASE("report::node_name names a node by node rank, host name and address", "[report]") {
  // Every host may have one name: the rank and the address tell the nodes apart.
  CHECK(node_name(1, "vm", "10.0.0.2") == "node 1 (vm, 10.0.0.2)");
  CHECK(node_name(0, "vm", "10.0.0.1") == "node 0 (vm, 10.0.0.1)");
  // An address that says nothing more is left out.
  CHECK(node_name(2, "gpu7", "gpu7") == "node 2 (gpu7)");
  CHECK(node_name(2, "gpu7", "") == "node 2 (gpu7)");
  // A c10d agent between rounds has no node rank yet.
  CHECK(node_name(std::nullopt, "vm", "10.0.0.3") == "vm (10.0.0.3)");
  CHECK(node_name(std::nullopt, "vm", "") == "vm");
}
