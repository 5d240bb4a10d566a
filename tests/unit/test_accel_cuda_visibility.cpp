#include "accel/cuda_visibility.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel = gangrun::accel;

namespace {

using Indices = std::vector<std::uint64_t>;
using Positions = std::vector<std::size_t>;
using Uuids = std::vector<std::string>;

// The eight UUIDs of PyTorch's test_partial_uuid_resolver (reference §2.2).
const std::vector<std::string> k_uuids = {
    "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1", "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
    "GPU-e429a63e-c61c-4795-b757-5132caeb8e70", "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
    "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e", "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
    "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e", "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
};

std::vector<accel::Device> gpus(std::size_t count) {
  std::vector<accel::Device> devices;
  for (std::size_t i = 0; i < count; ++i) {
    accel::Device device;
    device.index = static_cast<int>(i);
    device.uuid = k_uuids[i % k_uuids.size()];
    devices.push_back(device);
  }
  return devices;
}

std::vector<accel::Device> migs() {
  std::vector<accel::Device> devices = gpus(2);
  devices[0].uuid = "MIG-89c850dc-1f0a-5b0c-9c6d-7c2e1f4a1b01";
  devices[1].uuid = "MIG-b4f1e2a3-5c6d-5e7f-8091-a2b3c4d5e6f7";
  devices[0].mig = devices[1].mig = true;
  return devices;
}

Indices indices(std::string_view value) { return accel::parse_cuda_visible_devices(value).indices; }
Uuids uuids(std::string_view value) { return accel::parse_cuda_visible_devices(value).uuids; }

Positions emulate(std::optional<std::string_view> value, std::size_t count = 8) {
  return accel::emulate_cuda_visible_devices(value, gpus(count)).positions();
}

Positions strict(std::optional<std::string_view> value, std::size_t count = 4) {
  gangrun::Expected<accel::CudaVisibility> visibility =
      accel::check_cuda_visible_devices(value, gpus(count));
  if (!visibility) FAIL(visibility.error().message());
  return visibility->positions();
}

std::string strict_error(std::string_view value, const std::vector<accel::Device>& devices) {
  gangrun::Expected<accel::CudaVisibility> visibility =
      accel::check_cuda_visible_devices(value, devices);
  if (visibility) return "(accepted)";
  CHECK(visibility.error().code() == gangrun::ErrorCode::usage);
  CHECK(visibility.error().exit_code() == 2);
  return visibility.error().message();
}

std::string strict_error(std::string_view value, std::size_t count = 4) {
  return strict_error(value, gpus(count));
}

}  // namespace

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("CUDA_VISIBLE_DEVICES parse: vectors from NVIDIA's docs, PyTorch and drivers",
          "[accel]") {
  CHECK(indices("").empty());                             // "" gives none
  CHECK(indices("0,2,-1,1") == Indices{0, 2});            // 0,2,-1,1 gives [0,2]
  CHECK(indices("2,1") == Indices{2, 1});                 // 2,1 gives [2,1]
  CHECK(indices("1gpu2,2ampere") == Indices{1, 2});       // 1gpu2,2ampere gives [1,2]
  CHECK(indices("0, 1, 2, -1, 3") == Indices{0, 1, 2});   // 0, 1, 2, -1, 3 gives [0,1,2]
  CHECK(indices("0, 1, 2, 1").empty());                   // 0, 1, 2, 1 gives []
  CHECK(indices("2, +3, -0, 5") == Indices{2, 3, 0, 5});  // 2, +3, -0, 5 gives [2,3,0,5]
  CHECK(indices("one,two,3,4").empty());                  // one,two,3,4 gives []
  CHECK(indices("4,3,two,one") == Indices{4, 3});         // 4,3,two,one gives [4,3]
  CHECK(uuids("GPU-123, 2") == Uuids{"GPU-123"});         // GPU-123, 2 gives [GPU-123]
  CHECK(uuids("GPU-9e8d35e3") == Uuids{"GPU-9e8d35e3"});  // GPU ids are parsed
  CHECK(uuids("MIG-89c850dc") == Uuids{"MIG-89c850dc"});  // MIG ids are parsed
  CHECK(uuids("GPU-9942,GPU-e4,GPU-9942").empty());       // a repeated entry empties it
  CHECK(accel::parse_cuda_visible_devices("MIG-89c850dc").form == accel::CudaEntryForm::mig_uuids);
  CHECK(accel::parse_cuda_visible_devices("GPU-1").form == accel::CudaEntryForm::gpu_uuids);
  CHECK(accel::parse_cuda_visible_devices("1").form == accel::CudaEntryForm::indices);
}

TEST_CASE("CUDA_VISIBLE_DEVICES parse: strtoul-like numbers and spaces", "[accel]") {
  CHECK(indices(" 1 , 2 ") == Indices{1, 2});  // spaces around an entry are skipped
  CHECK(indices("0x1") == Indices{0});         // base 10: the x is junk after 0
  CHECK(indices("010") == Indices{10});        // base 10: not octal
  CHECK(indices("-0") == Indices{0});
  CHECK(indices("+").empty());              // a sign without digits is no number
  CHECK(indices("-5,1").empty());           // a negative number ends the list
  CHECK(indices("0-2") == Indices{0});      // no ranges: "-2" is junk after 0
  CHECK(indices("0,") == Indices{0});       // an empty entry ends the list
  CHECK(indices(" GPU-9e8d35e3").empty());  // a space before GPU- makes it an index list
}

TEST_CASE("CUDA_VISIBLE_DEVICES emulation: indices against the devices", "[accel]") {
  CHECK(emulate(std::nullopt) == Positions{0, 1, 2, 3, 4, 5, 6, 7});  // unset gives all
  CHECK_FALSE(accel::emulate_cuda_visible_devices(std::nullopt, gpus(2)).set);
  CHECK(emulate("").empty());  // "" gives none
  CHECK(accel::emulate_cuda_visible_devices("", gpus(2)).hides_all());
  CHECK(accel::emulate_cuda_visible_devices("-1", gpus(2)).hides_all());
  CHECK(emulate("0,2,-1,1") == Positions{0, 2});
  CHECK(emulate("2,1") == Positions{2, 1});
  CHECK(emulate("1gpu2,2ampere") == Positions{1, 2});
  CHECK(emulate("0, 1, 2, -1, 3") == Positions{0, 1, 2});
  CHECK(emulate("0, 1, 2, 1").empty());
  CHECK(emulate("2, +3, -0, 5") == Positions{2, 3, 0, 5});
  CHECK(emulate("one,two,3,4").empty());
  CHECK(emulate("4,3,two,one") == Positions{4, 3});
  CHECK(emulate("1, 5, 0", 2) == Positions{1});                 // "1, 5, 0" on 2 GPUs gives [1]
  CHECK(emulate("0,1,2,3,-1,5,6,7") == Positions{0, 1, 2, 3});  // measured: 4 devices
  CHECK(emulate("0,1,2,3,-1,0,6,7") == Positions{0, 1, 2, 3});  // measured: 4 devices
  CHECK(emulate("99999999999999999999999,0").empty());          // saturates, past the end
  accel::CudaVisibility entries = accel::emulate_cuda_visible_devices(" 2 ,0", gpus(4));
  REQUIRE(entries.devices.size() == 2);
  CHECK(entries.devices[0] == accel::CudaVisibleDevice{2, "2"});
  CHECK(entries.devices[1] == accel::CudaVisibleDevice{0, "0"});
}

TEST_CASE("CUDA_VISIBLE_DEVICES emulation: UUIDs against 8 known UUIDs (§2.2)", "[accel]") {
  CHECK(emulate("GPU-9e8d35e3") == Positions{1});  // a unique prefix gives its index
  CHECK(emulate("GPU-e4,GPU-9e8d35e3") == Positions{2, 1});
  CHECK(emulate("GPU-9e8d35e3,GPU-1,GPU-47") == Positions{1, 7, 5});
  CHECK(emulate("GPU-123,GPU-9e8d35e3").empty());  // first unknown stops
  CHECK(emulate("GPU-9e8d35e3,GPU-123,GPU-47") == Positions{1});
  CHECK(emulate("GPU-9e8d35e3,GPU-e,GPU-47") == Positions{1});  // first ambiguous stops
  CHECK(emulate("GPU-9942,GPU-e4,GPU-9942").empty());           // duplicates give []
  CHECK(emulate("GPU-9942,GPU-9942190a").empty());              // two prefixes of one GPU give []
  CHECK(emulate("GPU-123, 2").empty());                         // [GPU-123], which matches no GPU
  CHECK(emulate("GPU-9e8d35e3, 2") == Positions{1});            // the index ends the UUID list
  CHECK(emulate("GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293") == Positions{1});  // full UUID
  // Prefixes that end inside a group (measured in #92315).
  CHECK(emulate("GPU-9e8d35e3-,GPU-e429a63e-c61c") == Positions{1, 2});
  CHECK(emulate("GPU-9E8D35E3").empty());  // case-sensitive, as PyTorch emulates it
  accel::CudaVisibility entries = accel::emulate_cuda_visible_devices("GPU-e4", gpus(8));
  REQUIRE(entries.devices.size() == 1);
  CHECK(entries.devices[0] == accel::CudaVisibleDevice{2, "GPU-e4"});
}

TEST_CASE("CUDA_VISIBLE_DEVICES emulation: MIG UUIDs, one per process", "[accel]") {
  CHECK(accel::emulate_cuda_visible_devices("MIG-89c850dc", migs()).positions() == Positions{0});
  CHECK(accel::emulate_cuda_visible_devices("MIG-b4f1,MIG-89c8", migs()).positions() ==
        Positions{1});
  CHECK(accel::emulate_cuda_visible_devices("MIG-89c850dc,GPU-9e8d35e3", migs()).positions() ==
        Positions{0});
  CHECK(accel::emulate_cuda_visible_devices("MIG-0000", migs()).positions().empty());
}

TEST_CASE("CUDA_VISIBLE_DEVICES strict: what is accepted", "[accel]") {
  CHECK(strict(std::nullopt) == Positions{0, 1, 2, 3});
  CHECK(strict("").empty());
  CHECK(strict("-1").empty());
  CHECK(strict("  ").empty());
  CHECK(accel::check_cuda_visible_devices("", gpus(4))->hides_all());
  CHECK(accel::check_cuda_visible_devices("-1", gpus(4))->hides_all());
  CHECK(strict("2,1") == Positions{2, 1});
  CHECK(strict(" 3 , 0 ") == Positions{3, 0});
  CHECK(strict("0") == Positions{0});
  CHECK(strict("GPU-9e8d35e3,GPU-e4", 8) == Positions{1, 2});
  CHECK(strict("GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293") == Positions{1});
  CHECK(accel::check_cuda_visible_devices("MIG-89c850dc", migs())->positions() == Positions{0});
}

TEST_CASE("CUDA_VISIBLE_DEVICES strict: each silent case is a usage error", "[accel]") {
  CHECK(strict_error("0,7,1") ==
        "CUDA_VISIBLE_DEVICES=0,7,1: entry '7' is past the last of 4 GPUs (0..3); the CUDA "
        "runtime would stop there and show only GPU 0");
  CHECK(strict_error("0,2,-1,1") ==
        "CUDA_VISIBLE_DEVICES=0,2,-1,1: entry '-1' is negative; the CUDA runtime would stop "
        "there and show GPUs 0 and 2");
  CHECK_THAT(strict_error("0, 1, 2, 1"),
             StartsWith("CUDA_VISIBLE_DEVICES=0, 1, 2, 1: entry '1' repeats GPU 1") &&
                 Contains("no GPU at all"));
  CHECK_THAT(strict_error("1gpu2,2ampere"),
             StartsWith("CUDA_VISIBLE_DEVICES=1gpu2,2ampere: entry '1gpu2' is not a plain index") &&
                 Contains("would read it as 1") && Contains("show GPUs 1 and 2"));
  CHECK_THAT(strict_error("0, 1, 2, -1, 3"),
             Contains("entry '-1' is negative") && Contains("show GPUs 0, 1 and 2"));
  CHECK_THAT(strict_error("2, +3, -0, 5", 8),
             Contains("entry '+3' is not a plain index") && Contains("read it as 3"));
  CHECK_THAT(strict_error("2, 3, -0, 5", 8),
             Contains("entry '-0' is not a plain index") && Contains("read it as 0"));
  CHECK_THAT(strict_error("one,two,3,4"),
             Contains("entry 'one' is neither an index nor a GPU-/MIG- UUID") &&
                 Contains("stop there and show no GPU"));
  CHECK_THAT(strict_error("4,3,two,one", 8),
             Contains("entry 'two'") && Contains("stop there and show GPUs 4 and 3"));
  CHECK(strict_error("1, 5, 0", 2) ==
        "CUDA_VISIBLE_DEVICES=1, 5, 0: entry '5' is past the last of 2 GPUs (0..1); the CUDA "
        "runtime would stop there and show only GPU 1");
  CHECK_THAT(strict_error("0", 0), Contains("entry '0' names a GPU, but there is none"));
  CHECK(strict_error("0,5,0") ==
        "CUDA_VISIBLE_DEVICES=0,5,0: entry '5' is past the last of 4 GPUs (0..3); the CUDA "
        "runtime would show no GPU (an entry repeated later in the list empties it, as PyTorch "
        "emulates it)");
  CHECK(emulate("0,5,0", 4).empty());  // PyTorch: the repeat empties the list before the trim
  CHECK_THAT(strict_error("0,"), Contains("entry '' is empty") && Contains("show only GPU 0"));
  CHECK_THAT(strict_error("-1,0"), Contains("entry '-1' is negative") && Contains("no GPU"));
  CHECK_THAT(strict_error("010", 16),
             Contains("entry '010' has a leading zero (write 10)") && Contains("decimal 10"));
  CHECK_THAT(strict_error("0x1"),
             Contains("entry '0x1' is not a plain index") && Contains("read it as 0"));
  CHECK_THAT(strict_error("0-2"), Contains("entry '0-2' is not a plain index"));
  CHECK_THAT(strict_error("0,GPU-e4", 8),
             Contains("entry 'GPU-e4' is a UUID in a list of indices"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES strict: UUID problems are usage errors", "[accel]") {
  CHECK(strict_error("GPU-123, 2", 8) ==
        "CUDA_VISIBLE_DEVICES=GPU-123, 2: entry 'GPU-123' matches no GPU; the CUDA runtime "
        "would stop there and show no GPU");
  CHECK_THAT(strict_error("GPU-9e8d35e3, 2", 8),
             Contains("entry ' 2' is not a GPU- UUID in a list of them"));
  CHECK_THAT(strict_error("GPU-9e8d35e3,2", 8),
             Contains("entry '2' is not a GPU- UUID in a list of them") &&
                 Contains("stop there and show only GPU 1"));
  CHECK_THAT(strict_error("GPU-9e8d35e3,GPU-e,GPU-47", 8),
             Contains("entry 'GPU-e' is ambiguous: it matches GPUs 2 (GPU-e429a63e") &&
                 Contains("3 (GPU-eee1dfbc") && Contains("stop there and show only GPU 1"));
  CHECK_THAT(strict_error("GPU-9942,GPU-e4,GPU-9942", 8),
             Contains("entry 'GPU-9942' names GPU 0 again") && Contains("no GPU at all"));
  CHECK_THAT(strict_error("GPU-9942,GPU-9942190a", 8),
             Contains("entry 'GPU-9942190a' names GPU 0 again"));
  CHECK_THAT(strict_error("GPU-9e8d35e3, GPU-e4", 8),
             Contains("entry ' GPU-e4' has spaces around a UUID") && Contains("never measured"));
  CHECK_THAT(strict_error(" GPU-9e8d35e3", 8),
             Contains("entry ' GPU-9e8d35e3' has spaces around a UUID"));
  CHECK_THAT(strict_error("GPU-9E8D35E3", 8),
             Contains("entry 'GPU-9E8D35E3' matches no GPU (UUIDs are written in lower-case"));
  CHECK_THAT(strict_error("GPU-9e8d35e3,MIG-89c850dc", 8),
             Contains("entry 'MIG-89c850dc' mixes MIG- with GPU- UUIDs"));
  CHECK_THAT(strict_error("MIG-89c850dc,MIG-b4f1", migs()),
             Contains("CUDA_VISIBLE_DEVICES=MIG-89c850dc,MIG-b4f1: entry 'MIG-b4f1' is a second "
                      "MIG device") &&
                 Contains("show only GPU 0"));
  CHECK_THAT(strict_error("GPU-9e8d35e3,", 8), Contains("entry '' is empty"));
}
