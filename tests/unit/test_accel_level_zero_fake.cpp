// The Level Zero backend through the real dlopen path, against tests/helpers/
// fake_ze.cpp (built as a libze_loader.so.1 that plays an Intel driver on a
// scripted machine). Every probe runs in a fresh child
// (probe_level_zero_in_child), as in gangrun: the driver reads
// ZE_AFFINITY_MASK, ZE_FLAT_DEVICE_HIERARCHY and ZE_ENABLE_PCI_ID_DEVICE_ORDER
// once per process. The last test holds the fake driver's view against
// accel/ze_affinity.hpp's emulation of the same driver.
#include "accel/level_zero_backend.hpp"
#include "accel/ze_affinity.hpp"
#include "probe/probe_mode.hpp"
#include "probe/probe_runner.hpp"
#include "util/dynamic_library.hpp"

#include <catch2/catch.hpp>

#include <level_zero/ze_api.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#ifndef FAKE_ZE_LIBRARY
#error "tests/CMakeLists.txt defines FAKE_ZE_LIBRARY as the built fake libze_loader.so.1"
#endif

using namespace gangrun;
using namespace gangrun::accel;
using Catch::Matchers::Contains;
using gangrun::probe::probe_level_zero_in_child;

namespace {

// A directory in the temp directory holding one machine file, removed at exit.
class MachineFile {
 public:
  explicit MachineFile(const std::string& json) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gangrun-fake-ze-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) FAIL("mkdtemp " << pattern);
    dir_ = pattern;
    path_ = (dir_ / "machine.json").string();
    std::ofstream(path_) << json;
  }
  MachineFile(const MachineFile&) = delete;
  MachineFile& operator=(const MachineFile&) = delete;
  ~MachineFile() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

constexpr std::uint64_t k_gib = 1024ULL * 1024 * 1024;

// Two Max 1550 cards of two tiles each and a single-tile Max 1100, listed in
// neither order; the driver puts them in PCI order: A (3a), B (9a), C (ba).
// Its default hierarchy is FLAT, as Intel's driver picks for this family.
constexpr const char* k_card_a = "aa0000000000000000000000000000a0";
constexpr const char* k_tile_a0 = "aa0000000000000000000000000000a1";
constexpr const char* k_tile_a1 = "aa0000000000000000000000000000a2";
constexpr const char* k_card_b = "bb0000000000000000000000000000b0";
constexpr const char* k_tile_b0 = "bb0000000000000000000000000000b1";
constexpr const char* k_tile_b1 = "bb0000000000000000000000000000b2";
constexpr const char* k_card_c = "cc0000000000000000000000000000c0";
constexpr const char* k_max_1550 = "Intel(R) Data Center GPU Max 1550";
constexpr const char* k_max_1100 = "Intel(R) Data Center GPU Max 1100";

const std::string& pvc_node() {
  static MachineFile file(R"({
    "driver_version": "1.3.29735",
    "default_hierarchy": "FLAT",
    "cards": [
      {"name": "Intel(R) Data Center GPU Max 1100", "uuid": "cc000000-0000-0000-0000-0000000000c0",
       "pci": "0000:ba:00.0", "memory": 51539607552, "eus": 448},
      {"name": "Intel(R) Data Center GPU Max 1550", "uuid": "bb0000000000000000000000000000b0",
       "pci": "0000:9a:00.0", "memory": 137438953472, "eus": 1024,
       "tiles": [{"uuid": "bb0000000000000000000000000000b1", "memory": 68719476736, "eus": 512},
                 {"uuid": "bb0000000000000000000000000000b2", "memory": 68719476736, "eus": 512}]},
      {"name": "Intel(R) Data Center GPU Max 1550", "uuid": "aa0000000000000000000000000000a0",
       "pci": "0000:3a:00.0", "memory": 137438953472, "eus": 1024,
       "tiles": [{"uuid": "aa0000000000000000000000000000a1", "memory": 68719476736, "eus": 512},
                 {"uuid": "aa0000000000000000000000000000a2", "memory": 68719476736, "eus": 512}]}
    ]})");
  return file.path();
}

// A desktop: the integrated GPU comes first in PCI order, the discrete one
// first in the driver's default order.
constexpr const char* k_igpu = "00000000000000000000000000000102";
constexpr const char* k_arc = "00000000000000000000000000030000";

const std::string& desktop() {
  static MachineFile file(R"({
    "default_hierarchy": "COMPOSITE",
    "cards": [
      {"name": "Intel(R) UHD Graphics 770", "uuid": "00000000000000000000000000000102",
       "pci": "0000:00:02.0", "memory": 16777216000, "eus": 32, "integrated": true},
      {"name": "Intel(R) Arc(TM) A770 Graphics", "uuid": "00000000000000000000000000030000",
       "pci": "0000:03:00.0", "memory": 16225243136, "eus": 512}
    ]})");
  return file.path();
}

// The child's whole environment: the fake loader, a machine, and extra.
EnvMap fake_env(const std::string& machine, const EnvMap& extra = {}) {
  EnvMap env{{"GANGRUN_LEVEL_ZERO_LIBRARY", FAKE_ZE_LIBRARY}, {"FAKE_ZE_MACHINE", machine}};
  for (const auto& [name, value] : extra) env[name] = value;
  return env;
}

BackendReport probe_fake(const std::string& machine, const EnvMap& extra = {}) {
  return probe_level_zero_in_child(fake_env(machine, extra));
}

std::vector<std::string> uuids(const BackendReport& report) {
  std::vector<std::string> out;
  for (const Device& device : report.devices) out.push_back(device.uuid);
  return out;
}

std::vector<int> tiles(const BackendReport& report) {
  std::vector<int> out;
  for (const Device& device : report.devices) out.push_back(device.tiles);
  return out;
}

std::string why(const BackendReport& report) { return report.unavailable.value_or("<available>"); }

using Uuids = std::vector<std::string>;

}  // namespace

TEST_CASE("Level Zero fake: built as libze_loader.so.1 in a directory of its own",
          "[accel][level_zero]") {
  std::filesystem::path library(FAKE_ZE_LIBRARY);
  CHECK(library.parent_path().filename() == "fake_ze");
  CHECK(std::filesystem::exists(library.parent_path() / "libze_loader.so.1"));
}

TEST_CASE("Level Zero fake: COMPOSITE lists the cards, each with its tiles",
          "[accel][level_zero]") {
  BackendReport report = probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}});
  INFO(why(report));
  REQUIRE_FALSE(report.unavailable);
  CHECK(report.kind == DeviceKind::xpu);
  CHECK(report.driver_version == "1.3.29735");
  CHECK(uuids(report) == Uuids{k_card_a, k_card_b, k_card_c});
  CHECK(tiles(report) == std::vector<int>{2, 2, 0});
  REQUIRE(report.devices.size() == 3);
  for (std::size_t i = 0; i < report.devices.size(); ++i) {
    CHECK(report.devices[i].index == static_cast<int>(i));
    CHECK(report.devices[i].kind == DeviceKind::xpu);
  }

  const Device& a = report.devices[0];
  CHECK(a.name == k_max_1550);
  CHECK(a.memory_bytes == 128 * k_gib);
  CHECK(a.compute_units == 1024);
  REQUIRE(a.pci);
  CHECK(*a.pci == PciAddress{0, 0x3a, 0, 0});

  const Device& c = report.devices[2];
  CHECK(c.name == k_max_1100);
  CHECK(c.uuid == k_card_c);  // dashes in the machine file are not part of it
  CHECK(c.memory_bytes == 48 * k_gib);
  CHECK(c.compute_units == 448);
  REQUIRE(c.pci);
  CHECK(*c.pci == PciAddress{0, 0xba, 0, 0});
}

TEST_CASE("Level Zero fake: FLAT lists every tile as a device, card by card",
          "[accel][level_zero]") {
  Uuids leaves{k_tile_a0, k_tile_a1, k_tile_b0, k_tile_b1, k_card_c};
  BackendReport flat = probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "FLAT"}});
  INFO(why(flat));
  CHECK(uuids(flat) == leaves);
  CHECK(tiles(flat) == std::vector<int>{0, 0, 0, 0, 0});
  REQUIRE(flat.devices.size() == 5);
  const Device& b1 = flat.devices[3];
  CHECK(b1.index == 3);
  CHECK(b1.name == k_max_1550);
  CHECK(b1.memory_bytes == 64 * k_gib);
  CHECK(b1.compute_units == 512);
  REQUIRE(b1.pci);
  CHECK(*b1.pci == PciAddress{0, 0x9a, 0, 0});  // a tile is at its card's address
  CHECK(flat.devices[4].memory_bytes == 48 * k_gib);

  // The machine's default is FLAT; COMBINED lists the same leaves; a value
  // that is not exactly a mode name is ignored.
  CHECK(uuids(probe_fake(pvc_node())) == leaves);
  CHECK(uuids(probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMBINED"}})) == leaves);
  CHECK(uuids(probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "composite"}})) == leaves);
}

TEST_CASE("Level Zero fake: ZE_AFFINITY_MASK never reorders", "[accel][level_zero]") {
  for (const char* mask : {"0,2", "2,0", "2,0,2"}) {
    INFO("ZE_AFFINITY_MASK=" << mask);
    BackendReport composite = probe_fake(
        pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}, {"ZE_AFFINITY_MASK", mask}});
    INFO(why(composite));
    CHECK(uuids(composite) == Uuids{k_card_a, k_card_c});
    CHECK(tiles(composite) == std::vector<int>{2, 0});
    REQUIRE(composite.devices.size() == 2);
    CHECK(composite.devices[1].index == 1);

    BackendReport flat = probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", mask}});
    CHECK(uuids(flat) == Uuids{k_tile_a0, k_tile_b0});
  }
  // Unfiltered spellings.
  for (const char* mask : {"", "default"}) {
    CHECK(probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", mask}}).devices.size() == 5);
  }
}

TEST_CASE("Level Zero fake: card.tile under COMPOSITE keeps only that tile",
          "[accel][level_zero]") {
  EnvMap composite{{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}};
  composite["ZE_AFFINITY_MASK"] = "1.1";
  BackendReport one = probe_fake(pvc_node(), composite);
  INFO(why(one));
  REQUIRE(one.devices.size() == 1);
  CHECK(one.devices[0].uuid == k_card_b);  // the card, with one sub-device left
  CHECK(one.devices[0].tiles == 1);
  CHECK(one.devices[0].index == 0);
  CHECK(one.devices[0].memory_bytes == 64 * k_gib);  // the fake's choice: the kept tiles' sum
  CHECK(one.devices[0].compute_units == 512);

  composite["ZE_AFFINITY_MASK"] = "1.0,0.1,1.1";
  BackendReport mixed = probe_fake(pvc_node(), composite);
  CHECK(uuids(mixed) == Uuids{k_card_a, k_card_b});
  CHECK(tiles(mixed) == std::vector<int>{1, 2});

  // The single-tile card has one slot: "2.0" is the whole card.
  composite["ZE_AFFINITY_MASK"] = "2.0";
  CHECK(uuids(probe_fake(pvc_node(), composite)) == Uuids{k_card_c});
}

TEST_CASE("Level Zero fake: FLAT ignores card.tile entries", "[accel][level_zero]") {
  BackendReport some = probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", "0.1,3"}});
  INFO(why(some));
  CHECK(uuids(some) == Uuids{k_tile_b1});

  // Nothing left: the driver does not initialise.
  BackendReport none = probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", "0.0,0.1"}});
  CHECK(none.devices.empty());
  CHECK_THAT(why(none), Contains("ZE_RESULT_ERROR_UNINITIALIZED"));
}

TEST_CASE("Level Zero fake: entries past the end are skipped, not an end", "[accel][level_zero]") {
  CHECK(uuids(probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"},
                                      {"ZE_AFFINITY_MASK", "5,1"}})) == Uuids{k_card_b});
  CHECK(uuids(probe_fake(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"},
                                      {"ZE_AFFINITY_MASK", "0.7,2"}})) == Uuids{k_card_c});
  CHECK(uuids(probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", "9,4,1"}})) ==
        Uuids{k_tile_a1, k_card_c});
}

TEST_CASE("Level Zero fake: ZE_ENABLE_PCI_ID_DEVICE_ORDER puts an integrated GPU first",
          "[accel][level_zero]") {
  BackendReport usual = probe_fake(desktop());
  INFO(why(usual));
  CHECK(uuids(usual) == Uuids{k_arc, k_igpu});  // discrete first
  CHECK(uuids(probe_fake(desktop(), {{"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "0"}})) ==
        Uuids{k_arc, k_igpu});

  BackendReport by_pci = probe_fake(desktop(), {{"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1"}});
  CHECK(uuids(by_pci) == Uuids{k_igpu, k_arc});
  REQUIRE(by_pci.devices.size() == 2);
  CHECK(by_pci.devices[0].name == "Intel(R) UHD Graphics 770");
  CHECK(by_pci.devices[0].compute_units == 32);
  REQUIRE(by_pci.devices[0].pci);
  CHECK(*by_pci.devices[0].pci == PciAddress{0, 0, 2, 0});

  // The order decides what a mask index means.
  CHECK(uuids(probe_fake(desktop(), {{"ZE_AFFINITY_MASK", "0"}})) == Uuids{k_arc});
  CHECK(uuids(probe_fake(desktop(), {{"ZE_AFFINITY_MASK", "0"},
                                     {"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1"}})) == Uuids{k_igpu});
}

TEST_CASE("Level Zero fake: a failing zeInit is unavailable, with the code",
          "[accel][level_zero]") {
  BackendReport lost = probe_fake(pvc_node(), {{"FAKE_ZE_FAIL_INIT", "0x70000001"}});
  CHECK(lost.devices.empty());
  CHECK(lost.kind == DeviceKind::xpu);
  CHECK(why(lost) == "zeInit failed: ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)");

  BackendReport unknown = probe_fake(pvc_node(), {{"FAKE_ZE_FAIL_INIT", "2147483646"}});
  CHECK(why(unknown) == "zeInit failed: error 0x7ffffffe");

  // No machine: the loader finds no driver, as on a machine without one.
  BackendReport no_driver =
      probe_level_zero_in_child({{"GANGRUN_LEVEL_ZERO_LIBRARY", FAKE_ZE_LIBRARY}});
  CHECK(no_driver.devices.empty());
  CHECK(why(no_driver) ==
        "zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED (0x78000001): no Level Zero driver");

  // A mask the driver's std::stoul throws on.
  BackendReport junk = probe_fake(pvc_node(), {{"ZE_AFFINITY_MASK", "0,abc"}});
  CHECK(junk.devices.empty());
  CHECK_THAT(why(junk), Contains("zeInit failed"));
}

TEST_CASE("Level Zero fake: a driver without the PCI extension gives no address",
          "[accel][level_zero]") {
  static MachineFile no_pci(R"({"pci_ext": false, "cards": [
      {"name": "Intel(R) Arc(TM) A770 Graphics", "uuid": "00000000000000000000000000030000",
       "pci": "0000:03:00.0", "memory": 16225243136, "eus": 512}]})");
  BackendReport report = probe_fake(no_pci.path());
  INFO(why(report));
  REQUIRE(report.devices.size() == 1);
  CHECK_FALSE(report.devices[0].pci);
  CHECK(report.devices[0].uuid == k_arc);
  CHECK(report.devices[0].memory_bytes == 16225243136ULL);
}

namespace {

// Calls the fake's entry points the wrong way, in a probe child, and sends
// back what they answered as unavailable: "name=0x.. name=0x..".
BackendReport misuse_probe(const EnvMap& env) {
  BackendReport report;
  report.kind = DeviceKind::xpu;
  auto library = DynamicLibrary::open(*env_lookup(env, "GANGRUN_LEVEL_ZERO_LIBRARY"));
  if (!library) {
    report.unavailable = library.error().describe();
    return report;
  }
  library->keep_loaded();
  auto init = *library->symbol<decltype(zeInit)>("zeInit");
  auto driver_get = *library->symbol<decltype(zeDriverGet)>("zeDriverGet");
  auto device_get = *library->symbol<decltype(zeDeviceGet)>("zeDeviceGet");
  auto properties = *library->symbol<decltype(zeDeviceGetProperties)>("zeDeviceGetProperties");
  auto sub_devices = *library->symbol<decltype(zeDeviceGetSubDevices)>("zeDeviceGetSubDevices");

  std::string answers;
  auto note = [&](const char* what, ze_result_t result) {
    char text[32];
    std::snprintf(text, sizeof text, "=0x%08x ", static_cast<unsigned>(result));
    answers += what;
    answers += text;
  };
  std::uint32_t count = 0;
  note("early", driver_get(&count, nullptr));
  note("init", init(ZE_INIT_FLAG_GPU_ONLY));
  note("again", init(ZE_INIT_FLAG_GPU_ONLY));
  note("null_count", driver_get(nullptr, nullptr));
  ze_driver_handle_t driver = nullptr;
  count = 1;
  driver_get(&count, &driver);
  note("null_driver", device_get(nullptr, &count, nullptr));
  std::vector<ze_device_handle_t> devices(8);
  count = 8;  // more than there are: lowered
  note("fill", device_get(driver, &count, devices.data()));
  answers += "count=" + std::to_string(count) + " ";
  bool distinct = count > 1 && devices[0] != nullptr && devices[0] != devices[1];
  answers += distinct ? "distinct " : "same ";

  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  note("driver_as_device", properties(reinterpret_cast<ze_device_handle_t>(driver), &props));
  note("null_device", properties(nullptr, &props));
  note("null_props", properties(devices[0], nullptr));
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  note("wrong_stype", properties(devices[0], &props));
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  note("good", properties(devices[0], &props));

  // COMPOSITE: the first card's tiles are devices too, flagged SUBDEVICE.
  std::uint32_t tiles = 0;
  sub_devices(devices[0], &tiles, nullptr);
  std::vector<ze_device_handle_t> tile_handles(tiles);
  sub_devices(devices[0], &tiles, tile_handles.data());
  if (tiles == 2) {
    ze_device_properties_t tile{};
    tile.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    note("tile", properties(tile_handles[1], &tile));
    bool flagged = (tile.flags & ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE) != 0 && tile.subdeviceId == 1;
    answers += flagged ? "subdevice " : "not-subdevice ";
  }
  report.unavailable = answers;
  return report;
}

// The probe child is this binary again: it must know the probe by name
// before main() dispatches to the probe mode.
const bool misuse_probe_registered = [] {
  gangrun::probe::register_probe("level_zero_misuse", misuse_probe);
  return true;
}();

}  // namespace

TEST_CASE("Level Zero fake: bad handles and structs are refused", "[accel][level_zero]") {
  BackendReport report = gangrun::probe::probe_in_child(
      "level_zero_misuse", DeviceKind::xpu, "Level Zero misuse",
      fake_env(pvc_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}}),
      k_level_zero_probe_timeout);
  std::string answers = why(report);
  INFO(answers);
  CHECK_THAT(answers, Contains("early=0x78000001 "));  // UNINITIALIZED before zeInit
  CHECK_THAT(answers, Contains("init=0x00000000 again=0x00000000 "));
  CHECK_THAT(answers, Contains("null_count=0x78000007 "));   // INVALID_NULL_POINTER
  CHECK_THAT(answers, Contains("null_driver=0x78000005 "));  // INVALID_NULL_HANDLE
  CHECK_THAT(answers, Contains("fill=0x00000000 count=3 distinct "));
  CHECK_THAT(answers, Contains("driver_as_device=0x78000004 "));  // INVALID_ARGUMENT
  CHECK_THAT(answers, Contains("null_device=0x78000005 "));
  CHECK_THAT(answers, Contains("null_props=0x78000007 "));
  CHECK_THAT(answers, Contains("wrong_stype=0x78000004 "));
  CHECK_THAT(answers, Contains("good=0x00000000 "));
  CHECK_THAT(answers, Contains("tile=0x00000000 subdevice "));
}

// ---- the fake driver against accel/ze_affinity.hpp's emulation ---------------

namespace {

// Three cards (3 tiles, none, 2 tiles). Tile t of a card has 2^t GiB and
// 2^t x 8 EUs, so a COMPOSITE card's memory says which tiles it kept.
const std::string& mixed_node() {
  static MachineFile file(R"({
    "default_hierarchy": "COMPOSITE",
    "cards": [
      {"name": "card two", "uuid": "20000000000000000000000000000000", "pci": "0000:b0:00.0",
       "memory": 3221225472, "eus": 24,
       "tiles": [{"uuid": "20000000000000000000000000000001", "memory": 1073741824, "eus": 8},
                 {"uuid": "20000000000000000000000000000002", "memory": 2147483648, "eus": 16}]},
      {"name": "card zero", "uuid": "00000000000000000000000000000000", "pci": "0000:10:00.0",
       "memory": 7516192768, "eus": 56,
       "tiles": [{"uuid": "00000000000000000000000000000001", "memory": 1073741824, "eus": 8},
                 {"uuid": "00000000000000000000000000000002", "memory": 2147483648, "eus": 16},
                 {"uuid": "00000000000000000000000000000003", "memory": 4294967296, "eus": 32}]},
      {"name": "card one", "uuid": "10000000000000000000000000000000", "pci": "0000:4d:00.0",
       "memory": 17179869184, "eus": 448}
    ]})");
  return file.path();
}

std::string hierarchy_name(ZeHierarchy hierarchy) { return std::string(to_string(hierarchy)); }

}  // namespace

TEST_CASE("Level Zero fake: the driver's view matches emulate_ze_affinity_mask",
          "[accel][level_zero]") {
  // The unfiltered views: cards (with tiles) and leaves, in driver order.
  BackendReport cards = probe_fake(mixed_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}});
  BackendReport leaves = probe_fake(mixed_node(), {{"ZE_FLAT_DEVICE_HIERARCHY", "FLAT"}});
  INFO(why(cards) << " / " << why(leaves));
  REQUIRE(tiles(cards) == std::vector<int>{3, 0, 2});
  REQUIRE(leaves.devices.size() == 6);
  std::vector<std::size_t> first_leaf{0, 3, 4};

  const char* masks[] = {"",      "default", "0",     "1",       "2,0",         "0,1,2,3,4,5",
                         "5",     "4,0",     "0.2",   "0.2,0.0", "0.1,1.0,2.1", "1.0",
                         "1.1",   "3",       "0.5,2", "0x2",     "010",         " 1",
                         "1junk", "2,",      "0.",    "-1",      "9.x",         "0,abc",
                         "0,,1",  ".1",      "0.1.2", "3,3,1,1"};
  for (ZeHierarchy hierarchy : {ZeHierarchy::composite, ZeHierarchy::flat, ZeHierarchy::combined}) {
    for (const char* mask : masks) {
      INFO(hierarchy_name(hierarchy) << " ZE_AFFINITY_MASK=\"" << mask << "\"");
      ZeVisibility expected = emulate_ze_affinity_mask(mask, cards.devices, hierarchy);
      BackendReport seen = probe_fake(
          mixed_node(),
          {{"ZE_FLAT_DEVICE_HIERARCHY", hierarchy_name(hierarchy)}, {"ZE_AFFINITY_MASK", mask}});
      INFO(why(seen));
      REQUIRE(seen.devices.size() == expected.devices.size());
      if (expected.devices.empty()) CHECK(seen.unavailable);
      for (std::size_t i = 0; i < expected.devices.size(); ++i) {
        const ZeVisibleDevice& want = expected.devices[i];
        const Device& got = seen.devices[i];
        const Device& card = cards.devices[want.card];
        if (hierarchy == ZeHierarchy::composite) {
          CHECK(got.uuid == card.uuid);
          CHECK(got.tiles == static_cast<int>(want.tiles.size()));
          if (!want.tiles.empty()) {
            std::uint64_t memory = 0;
            for (std::uint32_t tile : want.tiles) memory += (1ULL << tile) * k_gib;
            CHECK(got.memory_bytes == memory);
          }
        } else {
          std::size_t leaf = first_leaf[want.card] + (want.tiles.empty() ? 0 : want.tiles[0]);
          CHECK(got.uuid == leaves.devices[leaf].uuid);
          CHECK(got.tiles == 0);
        }
      }
    }
  }
}
