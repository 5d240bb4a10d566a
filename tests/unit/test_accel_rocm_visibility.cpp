#include "accel/rocm_visibility.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel = gangrun::accel;

namespace {

using Positions = std::vector<std::size_t>;
using Value = std::optional<std::string_view>;

// KFD GPUs in ROCr's order; UUIDs are "GPU-" and the unique_id as 16
// upper-case hex digits. Two pairs share a prefix, for ambiguity.
std::vector<accel::Device> gpus(std::size_t count = 4) {
  const std::vector<std::string> uuids = {"GPU-1A2B3C4D5E6F0001", "GPU-1A2B3C4D5E6F0002",
                                          "GPU-77000000000000AA", "GPU-7700000000000BBB"};
  std::vector<accel::Device> devices;
  for (std::size_t i = 0; i < count; ++i) {
    accel::Device device;
    device.kind = accel::DeviceKind::rocm;
    device.index = static_cast<int>(i);
    if (i < uuids.size()) device.uuid = uuids[i];
    devices.push_back(device);
  }
  return devices;
}

Positions rocr(Value value, std::size_t count = 4) {
  return accel::emulate_rocr_visible_devices(value, gpus(count)).devices;
}

Positions rocm(Value rocr_value, Value hip_value, Value cuda_value = std::nullopt) {
  return accel::emulate_rocm_visibility({rocr_value, hip_value, cuda_value}, gpus()).devices;
}

Positions strict(Value rocr_value, Value hip_value, Value cuda_value = std::nullopt) {
  gangrun::Expected<accel::RocmVisibility> visibility =
      accel::check_rocm_visibility({rocr_value, hip_value, cuda_value}, gpus());
  if (!visibility) FAIL(visibility.error().message());
  return visibility->devices;
}

std::string strict_error(Value rocr_value, Value hip_value, Value cuda_value = std::nullopt,
                         std::size_t count = 4) {
  gangrun::Expected<accel::RocmVisibility> visibility =
      accel::check_rocm_visibility({rocr_value, hip_value, cuda_value}, gpus(count));
  if (visibility) return "(accepted)";
  CHECK(visibility.error().code() == gangrun::ErrorCode::usage);
  CHECK(visibility.error().exit_code() == 2);
  return visibility.error().message();
}

}  // namespace

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("ROCR_VISIBLE_DEVICES emulation: ROCr's parser (§4.1)", "[accel]") {
  CHECK(rocr(std::nullopt) == Positions{0, 1, 2, 3});  // unset: every GPU
  CHECK_FALSE(accel::emulate_rocr_visible_devices(std::nullopt, gpus()).filtered);
  CHECK(rocr("").empty());  // set but empty: zero devices
  CHECK(accel::emulate_rocr_visible_devices("", gpus()).hides_all());
  CHECK(rocr("2,0") == Positions{2, 0});      // ranked in the order listed
  CHECK(rocr(" 1 , 3 ") == Positions{1, 3});  // tokens are trimmed
  CHECK(rocr("0x1") == Positions{1});         // strtol base 0: hex
  CHECK(rocr("010", 10) == Positions{8});     // and octal
  CHECK(rocr("+1") == Positions{1});          // a sign is accepted
  CHECK(rocr("1a").empty());                  // the whole token must be used
  CHECK(rocr("0,1a,2") == Positions{0});      // an invalid token ends the list
  CHECK(rocr("0,5,1") == Positions{0});       // so does one out of range
  CHECK(rocr("0,0,1") == Positions{0});       // and a duplicate
  CHECK(rocr("-1,0").empty());
  CHECK(rocr("0,,1") == Positions{0});            // an empty token: taken as invalid
  CHECK(rocr("0,1,junk", 2) == Positions{0, 1});  // only min(#GPUs, #tokens) are read
  CHECK(rocr("1,0,0", 2) == Positions{1, 0});
}

TEST_CASE("ROCR_VISIBLE_DEVICES emulation: UUID tokens", "[accel]") {
  CHECK(rocr("GPU-7700000000000BBB") == Positions{3});                         // full UUID
  CHECK(rocr("gpu-1a2b3c4d5e6f0002") == Positions{1});                         // upper-cased first
  CHECK(rocr("GPU-77000000000000A,GPU-1A2B3C4D5E6F0001") == Positions{2, 0});  // prefixes
  CHECK(rocr("GPU-1A2B").empty());               // ambiguous ends the list
  CHECK(rocr("0,GPU-FFFF,1") == Positions{0});   // unknown ends the list
  CHECK(rocr("GPU-").empty());                   // shorter than 5 characters
  CHECK(rocr("GPU-7700000000000BBB0").empty());  // longer than 20 characters
  CHECK(rocr("G1").empty());
  std::vector<accel::Device> zero_id = gpus();
  zero_id[3].uuid.clear();  // unique_id 0: never matches
  CHECK(accel::emulate_rocr_visible_devices("GPU-7700000000000", zero_id).devices == Positions{2});
}

TEST_CASE("HIP_VISIBLE_DEVICES emulation: HIP's parser over what ROCr left", "[accel]") {
  std::vector<accel::Device> all = gpus();
  CHECK(accel::emulate_hip_visible_devices(std::nullopt, all).devices == Positions{0, 1, 2, 3});
  CHECK(accel::emulate_hip_visible_devices("", all).devices == Positions{0, 1, 2, 3});  // unset
  CHECK_FALSE(accel::emulate_hip_visible_devices("", all).filtered);
  CHECK(accel::emulate_hip_visible_devices("2,0", all).devices == Positions{2, 0});
  CHECK(accel::emulate_hip_visible_devices(" 1", all).devices.empty());  // atoi must round-trip
  CHECK(accel::emulate_hip_visible_devices("01", all).devices.empty());
  CHECK(accel::emulate_hip_visible_devices("-0", all).devices.empty());
  CHECK(accel::emulate_hip_visible_devices("-1", all).devices.empty());
  CHECK(accel::emulate_hip_visible_devices("0,0,1", all).devices == Positions{0, 1});  // skipped
  CHECK(accel::emulate_hip_visible_devices("0,9,1", all).devices == Positions{0});     // ends
  CHECK(accel::emulate_hip_visible_devices("0,", all).devices == Positions{0});  // trailing comma
  CHECK(accel::emulate_hip_visible_devices(",0", all).devices.empty());
  CHECK(accel::emulate_hip_visible_devices("GPU-7700000000000BBB", all).devices == Positions{3});
  CHECK(accel::emulate_hip_visible_devices("GPU-77", all).devices == Positions{2});  // first wins
  CHECK(accel::emulate_hip_visible_devices("GPU-1a2b3c4d5e6f0002", all).devices.empty());
}

TEST_CASE("ROCm: ROCR_VISIBLE_DEVICES then HIP_VISIBLE_DEVICES, in sequence", "[accel]") {
  CHECK(rocm(std::nullopt, std::nullopt) == Positions{0, 1, 2, 3});
  CHECK(rocm("3,1,2", "2,0") == Positions{2, 3});  // HIP indexes ROCr's list
  CHECK(rocm("3,1,2", std::nullopt) == Positions{3, 1, 2});
  CHECK(rocm("3,1,2", "") == Positions{3, 1, 2});           // HIP "" counts as unset
  CHECK(rocm("3,1,2", std::nullopt, "1") == Positions{1});  // HIP falls back to CUDA_
  CHECK(rocm("3,1,2", "", "1") == Positions{1});
  CHECK(rocm("3,1,2", "0", "1") == Positions{3});  // HIP_ has priority
  CHECK(rocm("3,1,2", "3").empty());               // past ROCr's list: ends
  CHECK(rocm("", "0").empty());                    // nothing left to index
  CHECK(rocm("2,3", "GPU-7700000000000BBB") == Positions{3});
  CHECK(rocm("3", "GPU-1A2B3C4D5E6F0001").empty());  // a UUID ROCr hid
  CHECK(
      accel::emulate_rocm_visibility({std::nullopt, std::nullopt, std::nullopt}, gpus()).filtered ==
      false);
}

TEST_CASE("ROCm strict: what is accepted", "[accel]") {
  CHECK(strict(std::nullopt, std::nullopt) == Positions{0, 1, 2, 3});
  CHECK(strict("", std::nullopt).empty());  // ROCr's way to hide every GPU
  CHECK(accel::check_rocm_visibility({"", std::nullopt, std::nullopt}, gpus())->hides_all());
  CHECK(strict("", "").empty());              // nothing left for HIP "" to reveal
  CHECK(strict(std::nullopt, "-1").empty());  // HIP's way to hide every GPU
  CHECK(strict("2,0", "1") == Positions{0});
  CHECK(strict(" 3 , 1 ", std::nullopt) == Positions{3, 1});
  CHECK(strict("GPU-7700000000000BBB,gpu-1a2b3c4d5e6f0001", std::nullopt) == Positions{3, 0});
  CHECK(strict(std::nullopt, "GPU-7700000000000BBB") == Positions{3});
  CHECK(strict(std::nullopt, std::nullopt, "1,0") == Positions{1, 0});
}

TEST_CASE("ROCm strict: each silent ROCR_VISIBLE_DEVICES case is a usage error", "[accel]") {
  CHECK(strict_error("0,5", std::nullopt) ==
        "ROCR_VISIBLE_DEVICES=0,5: entry '5' is past the last of the 4 GPUs on this node (0..3); "
        "ROCr would stop there and show only GPU 0");
  CHECK_THAT(strict_error("0,0", std::nullopt),
             Contains("ROCR_VISIBLE_DEVICES=0,0: entry '0' repeats GPU 0") &&
                 Contains("stop there and show only GPU 0"));
  CHECK_THAT(strict_error("0x1", std::nullopt),
             Contains("entry '0x1' is not plain decimal: ROCr reads it as 1"));
  CHECK_THAT(strict_error("010", std::nullopt), Contains("entry '010' is not plain decimal: ROCr "
                                                         "reads it as 8"));
  CHECK_THAT(strict_error("-1", std::nullopt),
             Contains("entry '-1' is negative") && Contains("show no GPU"));
  CHECK_THAT(strict_error("1a", std::nullopt),
             Contains("entry '1a' is neither an index nor a GPU- UUID"));
  CHECK_THAT(strict_error("0,,1", std::nullopt), Contains("entry '' is empty"));
  CHECK_THAT(strict_error("GPU-1A2B", std::nullopt),
             Contains("entry 'GPU-1A2B' is ambiguous: it matches GPUs 0 and 1"));
  CHECK_THAT(strict_error("GPU-FFFF", std::nullopt), Contains("entry 'GPU-FFFF' matches no GPU"));
  CHECK_THAT(strict_error("GPU-", std::nullopt),
             Contains("entry 'GPU-' is not GPU- followed by 1 to 16 hex digits"));
  CHECK_THAT(strict_error("0,1,junk", std::nullopt, std::nullopt, 2),
             Contains("entry 'junk'") &&
                 Contains("ROCr reads only as many entries as there are GPUs (2), so it would "
                          "ignore it and show GPUs 0 and 1"));
}

TEST_CASE("ROCm strict: each silent HIP case is a usage error", "[accel]") {
  CHECK(strict_error("1,2", "2") ==
        "ROCR_VISIBLE_DEVICES=1,2 HIP_VISIBLE_DEVICES=2: entry '2' is past the last of the 2 GPUs "
        "ROCR_VISIBLE_DEVICES leaves (0..1); HIP would stop there and show no GPU");
  CHECK_THAT(strict_error(std::nullopt, "0,0"),
             StartsWith("HIP_VISIBLE_DEVICES=0,0: entry '0' repeats a GPU listed before") &&
                 Contains("HIP would skip it and show only GPU 0"));
  CHECK_THAT(strict_error(std::nullopt, " 1"),
             Contains("entry ' 1' has spaces around it, which HIP does not accept"));
  CHECK_THAT(strict_error(std::nullopt, "01"), Contains("entry '01' is not a plain decimal index"));
  CHECK_THAT(strict_error(std::nullopt, "0,-1"), Contains("entry '-1' is negative"));
  CHECK_THAT(strict_error(std::nullopt, "0,"), Contains("entry '' is empty"));
  CHECK_THAT(strict_error(std::nullopt, "GPU-1A2B"),
             Contains("entry 'GPU-1A2B' is ambiguous: it matches GPUs 0 and 1") &&
                 Contains("HIP would take the first"));
  CHECK_THAT(strict_error(std::nullopt, "GPU-1a2b3c4d5e6f0002"),
             Contains("matches no GPU (HIP compares UUIDs case-sensitively"));
  CHECK_THAT(strict_error("3", "GPU-1A2B3C4D5E6F0001"),
             Contains("entry 'GPU-1A2B3C4D5E6F0001' matches none of the GPUs "
                      "ROCR_VISIBLE_DEVICES leaves; HIP would stop there and show no GPU"));
  CHECK_THAT(strict_error(std::nullopt, std::nullopt, "7"),
             StartsWith("CUDA_VISIBLE_DEVICES=7 (read by HIP: HIP_VISIBLE_DEVICES is not set): "
                        "entry '7' is past the last of the 4 GPUs on this node"));
  CHECK(strict_error(std::nullopt, "") ==
        "HIP_VISIBLE_DEVICES is set but empty; HIP treats an empty value as unset and would show "
        "GPUs 0, 1, 2 and 3 (to hide every GPU, set ROCR_VISIBLE_DEVICES to the empty string)");
  CHECK_THAT(strict_error(std::nullopt, "", "1"),
             Contains("would read CUDA_VISIBLE_DEVICES=1 instead and show only GPU 1"));
  CHECK_THAT(strict_error(std::nullopt, std::nullopt, ""),
             StartsWith("CUDA_VISIBLE_DEVICES is set but empty"));
}
