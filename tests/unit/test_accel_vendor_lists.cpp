#include "accel/vendor_lists.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel = gangrun::accel;

namespace {

using accel::VendorList;
using Tokens = std::vector<std::string>;
using Value = std::optional<std::string_view>;

Tokens parsed(VendorList list, Value value) {
  gangrun::Expected<Tokens> tokens = accel::parse_vendor_list(list, value);
  if (!tokens) FAIL(tokens.error().message());
  return *tokens;
}

std::string error_of(VendorList list, Value value) {
  gangrun::Expected<Tokens> tokens = accel::parse_vendor_list(list, value);
  if (tokens) return "(accepted)";
  CHECK(tokens.error().code() == gangrun::ErrorCode::usage);
  CHECK(tokens.error().exit_code() == 2);
  return tokens.error().message();
}

}  // namespace

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("vendor lists: each list's variable", "[accel][vendor]") {
  CHECK(accel::variable_of(VendorList::habana) == "HABANA_VISIBLE_MODULES");
  CHECK(accel::variable_of(VendorList::ascend) == "ASCEND_RT_VISIBLE_DEVICES");
  CHECK(accel::variable_of(VendorList::neuron) == "NEURON_RT_VISIBLE_CORES");
}

TEST_CASE("vendor lists: unset is a usage error telling the user what to set", "[accel][vendor]") {
  std::string habana = error_of(VendorList::habana, std::nullopt);
  CHECK_THAT(habana, StartsWith("HABANA_VISIBLE_MODULES is not set"));
  CHECK(habana ==
        "HABANA_VISIBLE_MODULES is not set: gangrun cannot enumerate Gaudi modules, so with "
        "--accelerator hpu it splits the ones HABANA_VISIBLE_MODULES lists among the workers; set "
        "HABANA_VISIBLE_MODULES to the module IDs to use (hl-smi -Q index,module_id lists them), "
        "e.g. HABANA_VISIBLE_MODULES=0,1,2,3");
  CHECK_THAT(habana, Contains("e.g. HABANA_VISIBLE_MODULES=0,1,2,3"));
  std::string ascend = error_of(VendorList::ascend, std::nullopt);
  CHECK_THAT(ascend, Contains("cannot enumerate Ascend NPUs"));
  CHECK_THAT(ascend, Contains("--accelerator npu"));
  CHECK_THAT(ascend, Contains("e.g. ASCEND_RT_VISIBLE_DEVICES=0,1,2,3"));
  std::string neuron = error_of(VendorList::neuron, std::nullopt);
  CHECK_THAT(neuron, Contains("cannot enumerate NeuronCores"));
  CHECK_THAT(neuron, Contains("--accelerator neuron"));
  CHECK_THAT(neuron, Contains("e.g. NEURON_RT_VISIBLE_CORES=0,1,2,3"));
}

TEST_CASE("vendor lists: set but empty is zero devices", "[accel][vendor]") {
  for (VendorList list : {VendorList::habana, VendorList::ascend, VendorList::neuron}) {
    CHECK(parsed(list, "").empty());
  }
}

TEST_CASE("HABANA_VISIBLE_MODULES: distinct module IDs, in any order", "[accel][vendor]") {
  CHECK(parsed(VendorList::habana, "0") == Tokens{"0"});
  CHECK(parsed(VendorList::habana, "0,1,2,3") == Tokens{"0", "1", "2", "3"});
  CHECK(parsed(VendorList::habana, "3,1,7") == Tokens{"3", "1", "7"});
  CHECK(parsed(VendorList::habana, "65535") == Tokens{"65535"});
}

TEST_CASE("HABANA_VISIBLE_MODULES: each bad entry is named with a fix", "[accel][vendor]") {
  auto error = [](std::string_view value) { return error_of(VendorList::habana, value); };
  CHECK(error("0,,1") == "HABANA_VISIBLE_MODULES=0,,1: entry '' is empty; remove the extra comma");
  CHECK(error("0,1,") == "HABANA_VISIBLE_MODULES=0,1,: entry '' is empty; remove the extra comma");
  CHECK(error("0,-1") ==
        "HABANA_VISIBLE_MODULES=0,-1: entry '-1' is negative; module IDs start at 0; write each "
        "module as a plain decimal number, e.g. HABANA_VISIBLE_MODULES=0,1,2,3");
  CHECK_THAT(error("+1"), StartsWith("HABANA_VISIBLE_MODULES=+1: entry '+1' is not a module ID"));
  CHECK_THAT(error("0,x"), StartsWith("HABANA_VISIBLE_MODULES=0,x: entry 'x' is not a module ID"));
  CHECK_THAT(error("0x1"), Contains("entry '0x1' is not a module ID"));
  CHECK_THAT(error("0-3"), Contains("entry '0-3' is not a module ID"));  // no ranges here
  CHECK(error("01") == "HABANA_VISIBLE_MODULES=01: entry '01' has a leading zero; write it as '1'");
  CHECK(error("00") == "HABANA_VISIBLE_MODULES=00: entry '00' has a leading zero; write it as '0'");
  CHECK(error("65536") ==
        "HABANA_VISIBLE_MODULES=65536: entry '65536' is larger than 65535, more Gaudi modules "
        "than any node has; list the Gaudi modules to use, e.g. HABANA_VISIBLE_MODULES=0,1,2,3");
  CHECK_THAT(error("99999999999999999999999"), Contains("is larger than 65535"));
  CHECK(error("0, 1") ==
        "HABANA_VISIBLE_MODULES=0, 1: entry ' 1' contains a space; remove the spaces: "
        "HABANA_VISIBLE_MODULES=0,1");
  CHECK_THAT(error(" "), Contains("entry ' ' contains a space"));
  CHECK(error("1,2,1") ==
        "HABANA_VISIBLE_MODULES=1,2,1: entry '1' repeats module 1; list each module once");
}

TEST_CASE("ASCEND_RT_VISIBLE_DEVICES: distinct IDs in ascending order", "[accel][vendor]") {
  CHECK(parsed(VendorList::ascend, "0") == Tokens{"0"});
  CHECK(parsed(VendorList::ascend, "0,1,2,3") == Tokens{"0", "1", "2", "3"});
  CHECK(parsed(VendorList::ascend, "1,4,6") == Tokens{"1", "4", "6"});
}

TEST_CASE("ASCEND_RT_VISIBLE_DEVICES: a space, and what the runtime would read",
          "[accel][vendor]") {
  auto error = [](std::string_view value) { return error_of(VendorList::ascend, value); };
  // The Ascend runtime stops at the first space: "1, 2,3" is read as "1".
  CHECK(error("1, 2,3") ==
        "ASCEND_RT_VISIBLE_DEVICES=1, 2,3: entry ' 2' contains a space, where the Ascend "
        "runtime stops reading: the runtime would read only '1'; remove the spaces: "
        "ASCEND_RT_VISIBLE_DEVICES=1,2,3");
  CHECK_THAT(error("0,1 ,2"), Contains("entry '1 ' contains a space"));
  CHECK_THAT(error("0,1 ,2"), Contains("the runtime would read only '0,1'"));
  CHECK_THAT(error(" 0,1"), Contains("the runtime would read no NPU"));
  CHECK_THAT(error("0,1\t"), Contains("the runtime would read only '0,1'"));
}

TEST_CASE("ASCEND_RT_VISIBLE_DEVICES: each bad entry is named with a fix", "[accel][vendor]") {
  auto error = [](std::string_view value) { return error_of(VendorList::ascend, value); };
  // An invalid ID ends the runtime's list: say what it would have read.
  CHECK(error("0,x,2") ==
        "ASCEND_RT_VISIBLE_DEVICES=0,x,2: entry 'x' is not an NPU ID (a plain decimal number), "
        "and the Ascend runtime, which stops at the first invalid ID, would read only '0'; "
        "write each NPU as a plain decimal number, e.g. ASCEND_RT_VISIBLE_DEVICES=0,1,2,3");
  CHECK_THAT(error("0,,1"), Contains("entry '' is empty, and the Ascend runtime"));
  CHECK_THAT(error("-1"), Contains("entry '-1' is negative"));
  CHECK_THAT(error("-1"), Contains("would read no NPU"));
  CHECK_THAT(error("0,01"), Contains("entry '01' has a leading zero; write it as '1'"));
  CHECK_THAT(error("0,70000"), Contains("entry '70000' is larger than 65535"));
  CHECK_THAT(error("0-3"), Contains("entry '0-3' is not an NPU ID"));
  CHECK(error("0,1,1") ==
        "ASCEND_RT_VISIBLE_DEVICES=0,1,1: entry '1' repeats NPU 1; list each NPU once");
  CHECK(error("0,3,2,5") ==
        "ASCEND_RT_VISIBLE_DEVICES=0,3,2,5: entry '2' comes after '3', but the Ascend runtime "
        "requires ascending IDs; sort them: ASCEND_RT_VISIBLE_DEVICES=0,2,3,5");
  CHECK_THAT(error("1,0"), Contains("sort them: ASCEND_RT_VISIBLE_DEVICES=0,1"));
}

TEST_CASE("NEURON_RT_VISIBLE_CORES: indices and ranges, expanded", "[accel][vendor]") {
  CHECK(parsed(VendorList::neuron, "0") == Tokens{"0"});
  CHECK(parsed(VendorList::neuron, "0-3") == Tokens{"0", "1", "2", "3"});
  CHECK(parsed(VendorList::neuron, "3-3") == Tokens{"3"});
  CHECK(parsed(VendorList::neuron, "0,2") == Tokens{"0", "2"});
  CHECK(parsed(VendorList::neuron, "8-9,0-1,5") == Tokens{"8", "9", "0", "1", "5"});
  CHECK(parsed(VendorList::neuron, "0-65535").size() == 65536);
}

TEST_CASE("NEURON_RT_VISIBLE_CORES: each bad entry is named with a fix", "[accel][vendor]") {
  auto error = [](std::string_view value) { return error_of(VendorList::neuron, value); };
  CHECK(error("3-1") ==
        "NEURON_RT_VISIBLE_CORES=3-1: entry '3-1' runs backwards; write it as '1-3'");
  CHECK(error("0-3,2") ==
        "NEURON_RT_VISIBLE_CORES=0-3,2: entry '2' repeats NeuronCore 2, already in '0-3'; "
        "list each NeuronCore once");
  CHECK_THAT(error("0-3,2-5"),
             Contains("entry '2-5' repeats NeuronCore 2, already in '0-3'; list each"));
  CHECK(error("1,1") ==
        "NEURON_RT_VISIBLE_CORES=1,1: entry '1' repeats NeuronCore 1; list each NeuronCore once");
  CHECK(error("0-") ==
        "NEURON_RT_VISIBLE_CORES=0-: entry '0-' is neither a NeuronCore index nor a range A-B "
        "of them; write a core as a plain decimal number and a range as two, e.g. "
        "NEURON_RT_VISIBLE_CORES=0-3");
  CHECK_THAT(error("-3"), Contains("entry '-3' is negative"));
  CHECK_THAT(error("0-1-2"), Contains("entry '0-1-2' is neither"));
  CHECK_THAT(error("a-b"), Contains("entry 'a-b' is neither"));
  CHECK_THAT(error("0--1"), Contains("entry '0--1' is neither"));
  CHECK_THAT(error("x"), Contains("entry 'x' is not a NeuronCore index"));
  CHECK_THAT(error("00-03"), Contains("entry '00-03' has a leading zero; write it as '0-3'"));
  CHECK_THAT(error("07"), Contains("entry '07' has a leading zero; write it as '7'"));
  CHECK_THAT(error("0-70000"), Contains("entry '0-70000' is larger than 65535"));
  CHECK_THAT(error("0 - 3"), Contains("entry '0 - 3' contains a space; remove the spaces: "
                                      "NEURON_RT_VISIBLE_CORES=0-3"));
  CHECK_THAT(error("0,,1"), Contains("entry '' is empty; remove the extra comma"));
}

TEST_CASE("vendor masks: comma joins, Neuron writes a contiguous list as a range",
          "[accel][vendor]") {
  CHECK(accel::join_vendor_mask(VendorList::habana, {}).empty());
  CHECK(accel::join_vendor_mask(VendorList::habana, {"3"}) == "3");
  CHECK(accel::join_vendor_mask(VendorList::habana, {"3", "1", "2"}) == "3,1,2");
  CHECK(accel::join_vendor_mask(VendorList::habana, {"0", "1", "2"}) == "0,1,2");
  CHECK(accel::join_vendor_mask(VendorList::ascend, {"0", "1", "2"}) == "0,1,2");
  CHECK(accel::join_vendor_mask(VendorList::neuron, {}).empty());
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"5"}) == "5");
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"4", "5"}) == "4-5");
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"0", "1", "2", "3"}) == "0-3");
  // Not ascending and contiguous throughout: a plain comma list, never a mix.
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"0", "1", "2", "5"}) == "0,1,2,5");
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"3", "2", "1"}) == "3,2,1");
  CHECK(accel::join_vendor_mask(VendorList::neuron, {"0", "2"}) == "0,2");
}

TEST_CASE("vendor masks: a worker's share of a parsed list round-trips", "[accel][vendor]") {
  Tokens cores = parsed(VendorList::neuron, "0-7");
  Tokens second_half(cores.begin() + 4, cores.end());
  std::string mask = accel::join_vendor_mask(VendorList::neuron, second_half);
  CHECK(mask == "4-7");
  CHECK(parsed(VendorList::neuron, mask) == second_half);
  Tokens npus = parsed(VendorList::ascend, "0,2,4,6");
  std::string npu_mask = accel::join_vendor_mask(VendorList::ascend, {npus[1], npus[2]});
  CHECK(npu_mask == "2,4");
  CHECK(parsed(VendorList::ascend, npu_mask) == Tokens{"2", "4"});
}
