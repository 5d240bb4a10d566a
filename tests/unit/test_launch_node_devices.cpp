#include "launch/node_devices.hpp"

#include <catch2/catch.hpp>

using gangrun::launch::unprobed_cuda_warning;

TEST_CASE("launch::unprobed_cuda_warning judges an index list on its face", "[launch]") {
  auto warning = [](const char* value) {
    return unprobed_cuda_warning({{"CUDA_VISIBLE_DEVICES", value}});
  };
  REQUIRE(warning("0,0"));
  CHECK_THAT(*warning("0,0"), Catch::Matchers::Contains("CUDA_VISIBLE_DEVICES=0,0"));
  REQUIRE(warning("1gpu"));
  CHECK_THAT(*warning("1gpu"), Catch::Matchers::Contains("'1gpu'"));
  CHECK(warning("+1"));
  CHECK_FALSE(warning("2,0"));
  CHECK_FALSE(warning("7"));  // whether GPU 7 exists needs a probe
  CHECK_FALSE(warning(""));   // the documented way to hide every GPU
  CHECK_FALSE(warning("GPU-8932f937"));
  CHECK_FALSE(unprobed_cuda_warning({}));
}
