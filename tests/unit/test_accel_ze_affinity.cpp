#include "accel/ze_affinity.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel = gangrun::accel;

namespace {

using Z = accel::ZeVisibleDevice;
using Devices = std::vector<accel::ZeVisibleDevice>;
using Tiles = std::vector<std::uint32_t>;

constexpr accel::ZeHierarchy k_composite = accel::ZeHierarchy::composite;
constexpr accel::ZeHierarchy k_flat = accel::ZeHierarchy::flat;
constexpr accel::ZeHierarchy k_combined = accel::ZeHierarchy::combined;

// Cards in driver order, each with its tile count (0: no sub-devices).
std::vector<accel::Device> cards(const std::vector<int>& tiles) {
  std::vector<accel::Device> devices;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    accel::Device device;
    device.kind = accel::DeviceKind::xpu;
    device.index = static_cast<int>(i);
    device.tiles = tiles[i];
    devices.push_back(device);
  }
  return devices;
}

// The spec's example node: 2 cards x 4 tiles.
const std::vector<accel::Device> k_two_by_four = cards({4, 4});

Devices emulate(std::optional<std::string_view> value, accel::ZeHierarchy hierarchy,
                const std::vector<accel::Device>& devices = k_two_by_four) {
  return accel::emulate_ze_affinity_mask(value, devices, hierarchy).devices;
}

Devices strict(std::optional<std::string_view> value, accel::ZeHierarchy hierarchy,
               const std::vector<accel::Device>& devices = k_two_by_four) {
  gangrun::Expected<accel::ZeVisibility> visibility =
      accel::check_ze_affinity_mask(value, devices, hierarchy);
  if (!visibility) FAIL(visibility.error().message());
  return visibility->devices;
}

std::string strict_error(std::string_view value, accel::ZeHierarchy hierarchy,
                         const std::vector<accel::Device>& devices = k_two_by_four) {
  gangrun::Expected<accel::ZeVisibility> visibility =
      accel::check_ze_affinity_mask(value, devices, hierarchy);
  if (visibility) return "(accepted)";
  CHECK(visibility.error().code() == gangrun::ErrorCode::usage);
  CHECK(visibility.error().exit_code() == 2);
  return visibility.error().message();
}

const Tiles k_all{0, 1, 2, 3};

}  // namespace

using Catch::Matchers::Contains;

TEST_CASE("ZE_FLAT_DEVICE_HIERARCHY: exact names, else the driver's default", "[accel]") {
  CHECK(accel::ze_hierarchy(std::nullopt, k_flat) == k_flat);
  CHECK(accel::ze_hierarchy("COMPOSITE", k_flat) == k_composite);
  CHECK(accel::ze_hierarchy("FLAT", k_composite) == k_flat);
  CHECK(accel::ze_hierarchy("COMBINED", k_flat) == k_combined);
  CHECK(accel::ze_hierarchy("flat", k_composite) == k_composite);  // case-sensitive
  CHECK(accel::ze_hierarchy("", k_flat) == k_flat);
  CHECK(accel::check_ze_hierarchy("COMBINED", k_flat) == k_combined);
  CHECK(accel::check_ze_hierarchy(std::nullopt, k_composite) == k_composite);
  gangrun::Expected<accel::ZeHierarchy> bad = accel::check_ze_hierarchy("flat", k_composite);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code() == gangrun::ErrorCode::usage);
  CHECK(bad.error().message() ==
        "ZE_FLAT_DEVICE_HIERARCHY=flat: 'flat' is not FLAT, COMPOSITE or COMBINED (the names are "
        "case-sensitive); the Level Zero driver would ignore it and use its default, COMPOSITE");
}

TEST_CASE("ZE_AFFINITY_MASK emulation: the spec's COMPOSITE examples (§3.4)", "[accel]") {
  // 1 gives card 1 as device 0 with all 4 tiles.
  CHECK(emulate("1", k_composite) == Devices{Z{1, k_all}});
  // 1.1,1.2 gives card 1 as device 0 with tiles 1 and 2 as sub-devices 0 and 1.
  CHECK(emulate("1.1,1.2", k_composite) == Devices{Z{1, {1, 2}}});
  // 0.2,1.3,1.0,0.3 gives both cards with 2 tiles each, order unchanged.
  CHECK(emulate("0.2,1.3,1.0,0.3", k_composite) == Devices{Z{0, {2, 3}}, Z{1, {0, 3}}});
}

TEST_CASE("ZE_AFFINITY_MASK emulation: the spec's FLAT examples (§3.4)", "[accel]") {
  CHECK(emulate("0,4", k_flat) == Devices{Z{0, {0}}, Z{1, {0}}});  // tile 0 of each card
  CHECK(emulate("1,2,7", k_flat) == Devices{Z{0, {1}}, Z{0, {2}}, Z{1, {3}}});  // three devices
  CHECK(emulate("0.0,0.1", k_flat).empty());  // a COMPOSITE-style mask selects nothing
  CHECK(accel::emulate_ze_affinity_mask("0.0,0.1", k_two_by_four, k_flat).filtered);
}

TEST_CASE("ZE_AFFINITY_MASK emulation: COMBINED reads the mask as FLAT does", "[accel]") {
  CHECK(emulate("0,4", k_combined) == Devices{Z{0, {0}}, Z{1, {0}}});
  CHECK(emulate("1,2,7", k_combined) == Devices{Z{0, {1}}, Z{0, {2}}, Z{1, {3}}});
  CHECK(emulate("0.0,0.1", k_combined).empty());
}

TEST_CASE("ZE_AFFINITY_MASK emulation: unset, empty and default filter nothing", "[accel]") {
  for (std::optional<std::string_view> value :
       {std::optional<std::string_view>{}, std::optional<std::string_view>{""},
        std::optional<std::string_view>{"default"}}) {
    CHECK(emulate(value, k_composite) == Devices{Z{0, k_all}, Z{1, k_all}});
    CHECK(emulate(value, k_flat).size() == 8);
    CHECK_FALSE(accel::emulate_ze_affinity_mask(value, k_two_by_four, k_flat).filtered);
  }
  CHECK(emulate(std::nullopt, k_flat)[5] == Z{1, {1}});
}

TEST_CASE("ZE_AFFINITY_MASK emulation: never reorders, skips, ignores repeats", "[accel]") {
  CHECK(emulate("2,0", k_flat) == Devices{Z{0, {0}}, Z{0, {2}}});  // reverse order: driver order
  CHECK(emulate("1,0", k_composite) == Devices{Z{0, k_all}, Z{1, k_all}});
  CHECK(emulate("1.2,1.1", k_composite) == Devices{Z{1, {1, 2}}});
  CHECK(emulate("0,9,1", k_composite) == Devices{Z{0, k_all}, Z{1, k_all}});  // skipped, no stop
  CHECK(emulate("9,1", k_flat) == Devices{Z{0, {1}}});
  CHECK(emulate("0.7,1", k_composite) == Devices{Z{1, k_all}});  // a tile past the end
  CHECK(emulate("1,1", k_composite) == Devices{Z{1, k_all}});    // duplicates are harmless
  CHECK(emulate("1,1.2", k_composite) == Devices{Z{1, k_all}});
  CHECK(emulate("3,3", k_flat) == Devices{Z{0, {3}}});
}

TEST_CASE("ZE_AFFINITY_MASK emulation: numbers as std::stoul base 0 reads them", "[accel]") {
  CHECK(emulate("0x1", k_composite) == Devices{Z{1, k_all}});  // hex
  CHECK(emulate("07", k_flat) == Devices{Z{1, {3}}});          // octal 7
  CHECK(emulate("010", k_flat).empty());                       // octal 8: past the 8 leaves
  CHECK(emulate(" 1", k_composite) == Devices{Z{1, k_all}});   // leading spaces skipped
  CHECK(emulate("1a", k_composite) == Devices{Z{1, k_all}});   // junk after the number ignored
  CHECK(emulate("-1", k_composite).empty());                   // 0xffffffff: skipped
  CHECK(emulate("4294967296", k_composite) == Devices{Z{0, k_all}});  // truncated to 32 bits
  CHECK(emulate("0,", k_composite) == Devices{Z{0, k_all}});          // a trailing comma is dropped
  CHECK(emulate("0.", k_composite) == Devices{Z{0, k_all}});          // and so is a trailing dot
  CHECK(emulate("0.0x2", k_composite) == Devices{Z{0, {2}}});
}

TEST_CASE("ZE_AFFINITY_MASK emulation: what the driver cannot read", "[accel]") {
  accel::ZeVisibility junk = accel::emulate_ze_affinity_mask("0,abc", k_two_by_four, k_composite);
  CHECK(junk.driver_fails_on == "abc");
  CHECK(junk.devices.empty());
  CHECK(accel::emulate_ze_affinity_mask("0,,1", k_two_by_four, k_flat).driver_fails_on == "");
  CHECK(accel::emulate_ze_affinity_mask("0.1.2", k_two_by_four, k_composite).driver_fails_on ==
        "0.1.2");
  CHECK(accel::emulate_ze_affinity_mask("DEFAULT", k_two_by_four, k_composite).driver_fails_on ==
        "DEFAULT");
  CHECK_FALSE(accel::emulate_ze_affinity_mask("9.x", k_two_by_four, k_composite).driver_fails_on);
}

TEST_CASE("ZE_AFFINITY_MASK emulation: cards without tiles are one leaf", "[accel]") {
  std::vector<accel::Device> mixed = cards({4, 0});
  CHECK(emulate("4", k_flat, mixed) == Devices{Z{1, {}}});
  CHECK(emulate("1", k_composite, mixed) == Devices{Z{1, {}}});
  CHECK(emulate("1.0", k_composite, mixed) == Devices{Z{1, {}}});
  CHECK(emulate("1.1", k_composite, mixed).empty());
  CHECK(emulate(std::nullopt, k_flat, mixed).size() == 5);
}

TEST_CASE("ZE_AFFINITY_MASK strict: what is accepted", "[accel]") {
  CHECK(strict(std::nullopt, k_flat).size() == 8);
  CHECK(strict("", k_composite) == Devices{Z{0, k_all}, Z{1, k_all}});
  CHECK(strict("default", k_composite).size() == 2);
  CHECK(strict("1", k_composite) == Devices{Z{1, k_all}});
  CHECK(strict("1.1,1.2", k_composite) == Devices{Z{1, {1, 2}}});
  CHECK(strict("0.2,0.3,1.0,1.3", k_composite) == Devices{Z{0, {2, 3}}, Z{1, {0, 3}}});
  CHECK(strict("0,4", k_flat) == Devices{Z{0, {0}}, Z{1, {0}}});
  CHECK(strict("1,2,7", k_combined) == Devices{Z{0, {1}}, Z{0, {2}}, Z{1, {3}}});
  CHECK(strict(" 0 , 1 ", k_composite).size() == 2);
}

TEST_CASE("ZE_AFFINITY_MASK strict: each silent case is a usage error", "[accel]") {
  CHECK(strict_error("0,2", k_composite) ==
        "ZE_AFFINITY_MASK=0,2: entry '2' is past the last of 2 cards (0..1); the Level Zero "
        "driver would skip it and show card 0 as device 0");
  CHECK(strict_error("0.0,0.1", k_flat) ==
        "ZE_AFFINITY_MASK=0.0,0.1: entry '0.0' names card.tile, but under the FLAT hierarchy "
        "every tile is a device of its own, numbered 0..7 card by card (card 0 tile 0 is device "
        "0); the Level Zero driver would ignore it and show no device");
  CHECK_THAT(strict_error("1.3", k_combined),
             Contains("under the COMBINED hierarchy") && Contains("(card 1 tile 3 is device 7)"));
  CHECK_THAT(strict_error("0,8", k_flat),
             Contains("entry '8' is past the last of 8 devices (one per tile under the FLAT") &&
                 Contains("skip it and show card 0 tile 0 as device 0"));
  CHECK_THAT(strict_error("0.4", k_composite),
             Contains("entry '0.4' names tile 4 of card 0, which has 4 tiles (0..3)") &&
                 Contains("show no device"));
  CHECK_THAT(strict_error("1.1", k_composite, cards({4, 0})),
             Contains("names tile 1 of card 1, which has no tiles"));
}

std::string order_note(std::string_view value, accel::ZeHierarchy hierarchy) {
  gangrun::Expected<accel::ZeVisibility> visibility =
      accel::check_ze_affinity_mask(value, k_two_by_four, hierarchy);
  REQUIRE(visibility);
  return visibility->order_note.value_or("(none)");
}

TEST_CASE("ZE_AFFINITY_MASK strict: out of order is accepted in driver order, with a note",
          "[accel]") {
  CHECK(strict("2,0", k_flat) == Devices{Z{0, {0}}, Z{0, {2}}});
  CHECK(order_note("2,0", k_flat) ==
        "ZE_AFFINITY_MASK=2,0: entry '0' comes after '2', but the Level Zero driver never "
        "reorders devices: a child sees card 0 tile 0 as device 0 and card 0 tile 2 as "
        "device 1 (list the entries in ascending order to say so)");
  CHECK(order_note("0,2", k_flat) == "(none)");
  CHECK_THAT(order_note("1,0", k_composite), Contains("entry '0' comes after '1'"));
  CHECK_THAT(order_note("0.2,1.3,1.0,0.3", k_composite),
             Contains("entry '1.0' comes after '1.3'") &&
                 Contains("card 0 (tiles 2 and 3) as device 0 and card 1 (tiles 0 and 3) as "
                          "device 1"));
  CHECK_THAT(strict_error("1,1", k_composite),
             Contains("entry '1' selects a device an earlier entry already selected") &&
                 Contains("count it once and show card 1 as device 0"));
  CHECK_THAT(strict_error("1,1.2", k_composite), Contains("entry '1.2' selects a device"));
  CHECK_THAT(strict_error("010", k_composite),
             Contains("entry '010' is not plain decimal: the driver reads '010' as 8"));
  CHECK_THAT(strict_error("0x1", k_flat),
             Contains("entry '0x1' is not plain decimal: the driver reads '0x1' as 1") &&
                 Contains("show card 0 tile 1 as device 0"));
  CHECK_THAT(strict_error("-1", k_composite), Contains("entry '-1' is not plain decimal"));
  CHECK_THAT(strict_error("0,abc", k_composite),
             Contains("entry 'abc' is not a number") &&
                 Contains("would fail on entry 'abc' (std::stoul throws"));
  CHECK_THAT(strict_error("0,,1", k_composite), Contains("entry '' is empty"));
  CHECK_THAT(strict_error("0,", k_composite),
             Contains("entry '' is empty; the Level Zero driver would ignore it and show card 0"));
  CHECK_THAT(strict_error("0.", k_composite), Contains("entry '0.' has an empty part"));
  CHECK_THAT(strict_error("0.1.2", k_composite),
             Contains("entry '0.1.2' has more than two parts") && Contains("would fail on"));
  CHECK_THAT(strict_error("DEFAULT", k_composite), Contains("entry 'DEFAULT' is not a number"));
}
