#include "placement/masks.hpp"
#include "placement/selection.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using gangrun::ErrorCode;
using gangrun::placement::Candidate;
using gangrun::placement::MaskFormat;
using gangrun::placement::MaskSettings;
using gangrun::placement::select_devices;
using gangrun::placement::SelectionFlags;
using gangrun::placement::slots_for_node;
using gangrun::placement::VisibilityMode;
using gangrun::placement::worker_masks;

namespace {

const std::vector<std::string> k_this_node = {"localhost", "node7"};

// count devices named by tokens "0".."count-1" with UUIDs GPU-<n>.
std::vector<Candidate> gpus(int count) {
  std::vector<Candidate> out;
  for (int i = 0; i < count; ++i) {
    Candidate c;
    c.device.index = i;
    c.device.name = "GPU " + std::to_string(i);
    c.device.uuid = "GPU-" + std::to_string(i) + "0000000-0000-0000-0000-000000000000";
    c.token = std::to_string(i);
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> tokens(const std::vector<Candidate>& devices) {
  std::vector<std::string> out;
  for (const Candidate& c : devices) out.push_back(c.token);
  return out;
}

using Masks = std::vector<std::optional<std::string>>;

}  // namespace

TEST_CASE("placement: NODE_SPEC slots for this node", "[placement]") {
  auto both = slots_for_node("localhost:0,2", "--include", k_this_node);
  REQUIRE(both);
  REQUIRE(*both);
  CHECK((*both)->slots == std::vector<int>{0, 2});
  CHECK_FALSE((*both)->all_slots);

  auto other = slots_for_node("worker-0@node7:3", "--include", k_this_node);
  REQUIRE(other);
  REQUIRE(*other);
  CHECK((*other)->slots == std::vector<int>{3});

  auto bare = slots_for_node("node7", "--exclude", k_this_node);
  REQUIRE(bare);
  REQUIRE(*bare);
  CHECK((*bare)->all_slots);

  auto absent = slots_for_node("worker-1:0", "--include", k_this_node);
  REQUIRE(absent);
  CHECK_FALSE(*absent);

  auto junk = slots_for_node("localhost:0,x", "--include", k_this_node);
  REQUIRE_FALSE(junk);
  CHECK(junk.error().code() == ErrorCode::usage);
  CHECK_THAT(junk.error().message(), Catch::Contains("--include") && Catch::Contains("'x'"));

  auto no_host = slots_for_node(":1", "--include", k_this_node);
  REQUIRE_FALSE(no_host);
}

TEST_CASE("placement: selection flags pick visible devices in the order given", "[placement]") {
  std::vector<Candidate> four = gpus(4);
  SelectionFlags none;
  CHECK(tokens(*select_devices(four, none, k_this_node)) ==
        std::vector<std::string>{"0", "1", "2", "3"});

  SelectionFlags ids;
  ids.gpu_ids = std::vector<int>{2, 0};
  CHECK(tokens(*select_devices(four, ids, k_this_node)) == std::vector<std::string>{"2", "0"});

  SelectionFlags first_two;
  first_two.num_gpus = 2;
  CHECK(tokens(*select_devices(four, first_two, k_this_node)) ==
        std::vector<std::string>{"0", "1"});

  SelectionFlags include;
  include.include = "localhost:1,3";
  CHECK(tokens(*select_devices(four, include, k_this_node)) == std::vector<std::string>{"1", "3"});

  SelectionFlags exclude;
  exclude.exclude = "localhost:0,2";
  CHECK(tokens(*select_devices(four, exclude, k_this_node)) == std::vector<std::string>{"1", "3"});

  SelectionFlags exclude_elsewhere;
  exclude_elsewhere.exclude = "worker-3:0";
  CHECK(select_devices(four, exclude_elsewhere, k_this_node)->size() == 4);
}

TEST_CASE("placement: a bad selection is a usage error naming the flag and the entry",
          "[placement]") {
  std::vector<Candidate> four = gpus(4);
  auto expect_error = [&](const SelectionFlags& flags, const std::string& a, const std::string& b) {
    auto selected = select_devices(four, flags, k_this_node);
    REQUIRE_FALSE(selected);
    CHECK(selected.error().code() == ErrorCode::usage);
    CHECK_THAT(selected.error().message(), Catch::Contains(a) && Catch::Contains(b));
  };
  SelectionFlags past_end;
  past_end.gpu_ids = std::vector<int>{0, 4};
  expect_error(past_end, "--gpu_ids", "device 4 does not exist");
  SelectionFlags twice;
  twice.gpu_ids = std::vector<int>{1, 1};
  expect_error(twice, "--gpu_ids", "device 1 is named twice");
  SelectionFlags too_many;
  too_many.num_gpus = 5;
  expect_error(too_many, "--num_gpus 5", "only 4");
  SelectionFlags elsewhere;
  elsewhere.include = "worker-1:0";
  expect_error(elsewhere, "--include 'worker-1:0'", "names no device of this node");
  SelectionFlags everything;
  everything.exclude = "localhost";
  expect_error(everything, "--exclude", "every device");
}

TEST_CASE("placement: shared masks pass through unless a selection was made", "[placement]") {
  std::vector<Candidate> four = gpus(4);
  MaskSettings shared;
  auto untouched = worker_masks(four, 2, shared, "CUDA_VISIBLE_DEVICES");
  REQUIRE(untouched);
  CHECK(*untouched == Masks{std::nullopt, std::nullopt});

  shared.selection_given = true;
  std::vector<Candidate> picked = {four[2], four[0]};
  CHECK(*worker_masks(picked, 2, shared, "CUDA_VISIBLE_DEVICES") == Masks{"2,0", "2,0"});

  shared.format = MaskFormat::uuid;
  auto uuids = worker_masks(picked, 1, shared, "CUDA_VISIBLE_DEVICES");
  REQUIRE(uuids);
  CHECK(*uuids == Masks{four[2].device.uuid + "," + four[0].device.uuid});
}

TEST_CASE("placement: per-rank masks give each worker its own devices", "[placement]") {
  std::vector<Candidate> eight = gpus(8);
  MaskSettings per_rank;
  per_rank.mode = VisibilityMode::per_rank;
  per_rank.devices_per_proc = 2;
  CHECK(*worker_masks(eight, 4, per_rank, "CUDA_VISIBLE_DEVICES") ==
        Masks{"0,1", "2,3", "4,5", "6,7"});

  per_rank.devices_per_proc = 1;
  CHECK(*worker_masks(eight, 3, per_rank, "ZE_AFFINITY_MASK") == Masks{"0", "1", "2"});

  auto short_of_devices =
      worker_masks(gpus(6), 4, MaskSettings{VisibilityMode::per_rank, 2, MaskFormat::token, true},
                   "CUDA_VISIBLE_DEVICES");
  REQUIRE_FALSE(short_of_devices);
  CHECK(short_of_devices.error().code() == ErrorCode::usage);
  CHECK_THAT(short_of_devices.error().message(), Catch::Contains("4 workers x 2") &&
                                                     Catch::Contains("need 8") &&
                                                     Catch::Contains("6 are selected"));
}

TEST_CASE("placement: a MIG instance is always one UUID alone in a mask", "[placement]") {
  std::vector<Candidate> migs = gpus(2);
  for (Candidate& c : migs) {
    c.device.mig = true;
    c.device.uuid = "MIG-" + c.token + "aaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
  }
  MaskSettings per_rank{VisibilityMode::per_rank, 1, MaskFormat::token, true};
  auto masks = worker_masks(migs, 2, per_rank, "CUDA_VISIBLE_DEVICES");
  REQUIRE(masks);
  CHECK(*masks == Masks{migs[0].device.uuid, migs[1].device.uuid});

  MaskSettings shared{VisibilityMode::shared, 1, MaskFormat::token, true};
  auto together = worker_masks(migs, 2, shared, "CUDA_VISIBLE_DEVICES");
  REQUIRE_FALSE(together);
  CHECK_THAT(together.error().message(), Catch::Contains("MIG") && Catch::Contains("per-rank"));
}

TEST_CASE("placement: --mask-format uuid needs every device to have one", "[placement]") {
  std::vector<Candidate> nameless = gpus(1);
  nameless[0].device.uuid.clear();
  MaskSettings uuid{VisibilityMode::per_rank, 1, MaskFormat::uuid, true};
  auto masks = worker_masks(nameless, 1, uuid, "CUDA_VISIBLE_DEVICES");
  REQUIRE_FALSE(masks);
  CHECK_THAT(masks.error().message(), Catch::Contains("--mask-format uuid"));
}
