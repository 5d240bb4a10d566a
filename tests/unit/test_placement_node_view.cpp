#include "placement/node_view.hpp"

#include <catch2/catch.hpp>

namespace accel = gangrun::accel;
namespace placement = gangrun::placement;
using Catch::Matchers::Contains;

namespace {

accel::Device gpu(int index, std::string uuid, int tiles = 0) {
  accel::Device device;
  device.index = index;
  device.name = "gpu" + std::to_string(index);
  device.uuid = std::move(uuid);
  device.tiles = tiles;
  return device;
}

const std::vector<accel::Device> k_four = {gpu(0, "GPU-aaaa0000-0000-0000-0000-000000000000"),
                                           gpu(1, "GPU-bbbb0000-0000-0000-0000-000000000000"),
                                           gpu(2, "GPU-cccc0000-0000-0000-0000-000000000000"),
                                           gpu(3, "GPU-dddd0000-0000-0000-0000-000000000000")};

std::vector<std::string> tokens(const placement::NodeView& view) {
  std::vector<std::string> out;
  for (const placement::Candidate& candidate : view.visible) out.push_back(candidate.token);
  return out;
}

std::vector<std::string> names(const placement::NodeView& view) {
  std::vector<std::string> out;
  for (const placement::Candidate& candidate : view.visible) out.push_back(candidate.device.name);
  return out;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("cuda_view: tokens are the inherited entries, or ordinals when unset", "[placement]") {
  auto all = placement::cuda_view(k_four, {});
  REQUIRE(all);
  CHECK(tokens(*all) == Strings{"0", "1", "2", "3"});
  CHECK(all->variable == "CUDA_VISIBLE_DEVICES");
  CHECK(all->shaped_by.empty());

  auto reordered = placement::cuda_view(
      k_four, {{"CUDA_VISIBLE_DEVICES", "2,0"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}});
  REQUIRE(reordered);
  CHECK(tokens(*reordered) == Strings{"2", "0"});
  CHECK(names(*reordered) == Strings{"gpu2", "gpu0"});
  CHECK(reordered->shaped_by.size() == 2);

  auto by_uuid = placement::cuda_view(k_four, {{"CUDA_VISIBLE_DEVICES", "GPU-cccc,GPU-aaaa"}});
  REQUIRE(by_uuid);
  CHECK(tokens(*by_uuid) == Strings{"GPU-cccc", "GPU-aaaa"});
  CHECK(names(*by_uuid) == Strings{"gpu2", "gpu0"});

  auto none = placement::cuda_view(k_four, {{"CUDA_VISIBLE_DEVICES", ""}});
  REQUIRE(none);
  CHECK(none->visible.empty());

  auto repeated = placement::cuda_view(k_four, {{"CUDA_VISIBLE_DEVICES", "0,0"}});
  REQUIRE_FALSE(repeated);
  CHECK_THAT(repeated.error().message(), Contains("CUDA_VISIBLE_DEVICES=0,0"));
}

TEST_CASE("xpu_view: flat indices, card.tile tokens under COMPOSITE, and the hierarchy pinned",
          "[placement]") {
  const std::vector<accel::Device> cards = {gpu(0, "", 2), gpu(1, "", 2)};
  auto flat = placement::xpu_view(cards, accel::ZeHierarchy::flat, {});
  REQUIRE(flat);
  CHECK(tokens(*flat) == Strings{"0", "1", "2", "3"});
  CHECK(flat->alongside_mask.at("ZE_FLAT_DEVICE_HIERARCHY") == "FLAT");
  CHECK(flat->keeps_driver_order);
  CHECK_FALSE(flat->uuid_masks);

  auto reversed =
      placement::xpu_view(cards, accel::ZeHierarchy::flat, {{"ZE_AFFINITY_MASK", "2,0"}});
  REQUIRE(reversed);
  CHECK(tokens(*reversed) == Strings{"0", "2"});  // the driver's order, not the mask's
  REQUIRE(reversed->notes.size() == 1);
  CHECK_THAT(reversed->notes.front(), Contains("never reorders"));

  auto composite =
      placement::xpu_view(cards, accel::ZeHierarchy::composite, {{"ZE_AFFINITY_MASK", "0.1,1"}});
  REQUIRE(composite);
  CHECK(tokens(*composite) == Strings{"0.1", "1"});
  CHECK(composite->visible.front().device.tiles == 1);
  CHECK(composite->alongside_mask.at("ZE_FLAT_DEVICE_HIERARCHY") == "COMPOSITE");

  auto ignored =
      placement::xpu_view(cards, accel::ZeHierarchy::flat, {{"ZE_AFFINITY_MASK", "0.1"}});
  REQUIRE_FALSE(ignored);
  CHECK_THAT(ignored.error().message(), Contains("ZE_AFFINITY_MASK=0.1"));

  auto hierarchy = placement::ze_hierarchy_in_force({{"ZE_FLAT_DEVICE_HIERARCHY", "flat"}},
                                                    accel::ZeHierarchy::flat);
  REQUIRE_FALSE(hierarchy);
  CHECK_THAT(hierarchy.error().message(), Contains("ZE_FLAT_DEVICE_HIERARCHY=flat"));
}

TEST_CASE("rocm_view: ROCR_VISIBLE_DEVICES by default, the user's HIP list when set",
          "[placement]") {
  auto plain = placement::rocm_view(k_four, {});
  REQUIRE(plain);
  CHECK(plain->variable == "ROCR_VISIBLE_DEVICES");
  CHECK(tokens(*plain) == Strings{"0", "1", "2", "3"});

  auto rocr = placement::rocm_view(k_four, {{"ROCR_VISIBLE_DEVICES", "3,1"}});
  REQUIRE(rocr);
  CHECK(rocr->variable == "ROCR_VISIBLE_DEVICES");
  CHECK(tokens(*rocr) == Strings{"3", "1"});  // unfiltered indices: a worker's ROCR replaces it

  // HIP indexes what ROCR left: [3, 1]; HIP 1,0 shows GPU 1 then GPU 3.
  auto hip = placement::rocm_view(
      k_four, {{"ROCR_VISIBLE_DEVICES", "3,1"}, {"HIP_VISIBLE_DEVICES", "1,0"}});
  REQUIRE(hip);
  CHECK(hip->variable == "HIP_VISIBLE_DEVICES");
  CHECK(tokens(*hip) == Strings{"1", "0"});
  CHECK(names(*hip) == Strings{"gpu1", "gpu3"});

  auto cuda_fallback = placement::rocm_view(k_four, {{"CUDA_VISIBLE_DEVICES", "2"}});
  REQUIRE(cuda_fallback);
  CHECK(cuda_fallback->variable == "CUDA_VISIBLE_DEVICES");
  CHECK(names(*cuda_fallback) == Strings{"gpu2"});
}

TEST_CASE("vendor_list_view: the inherited list is the device list", "[placement]") {
  auto habana =
      placement::vendor_list_view(accel::VendorList::habana, {{"HABANA_VISIBLE_MODULES", "4,5,6"}});
  REQUIRE(habana);
  CHECK(habana->kind == gangrun::accel::DeviceKind::hpu);
  CHECK(tokens(*habana) == Strings{"4", "5", "6"});

  auto neuron =
      placement::vendor_list_view(accel::VendorList::neuron, {{"NEURON_RT_VISIBLE_CORES", "0-3"}});
  REQUIRE(neuron);
  CHECK(neuron->kind == gangrun::accel::DeviceKind::neuron);
  CHECK(tokens(*neuron) == Strings{"0", "1", "2", "3"});

  auto ascend = placement::vendor_list_view(accel::VendorList::ascend, {});
  REQUIRE_FALSE(ascend);
  CHECK_THAT(ascend.error().message(), Contains("ASCEND_RT_VISIBLE_DEVICES"));
}
