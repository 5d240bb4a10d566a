// Which of the node's visible devices a launch uses: --gpu_ids (accelerate),
// --include/--exclude NODE_SPEC and --num_gpus (deepspeed). Pure.
//
// Positions are how a worker's runtime numbers the devices it inherits
// (0..n-1 in the order of the inherited visibility variable), which is what
// all three launchers mean by a GPU id on a node.
#pragma once

#include "accel/device.hpp"
#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gangrun::placement {

// One device a worker could see, and the token that names it in the
// visibility variable gangrun inherited ("2", "GPU-5ac1...", "0.1"), or its
// driver index when none was set. Masks are written with these tokens so a
// child's runtime resolves them in the same space as gangrun's did.
struct Candidate {
  accel::Device device;
  std::string token;
};

struct SelectionFlags {
  std::optional<std::vector<int>> gpu_ids;  // --gpu_ids 0,2 (nullopt: not given or "all")
  std::optional<std::string> include;       // --include NODE_SPEC
  std::optional<std::string> exclude;       // --exclude NODE_SPEC
  std::optional<int> num_gpus;              // --num_gpus N (also --num_accelerators)

  bool any() const { return gpu_ids || include || exclude || num_gpus; }
};

// The slots a deepspeed NODE_SPEC ("host[:s,s...][@host[:s,...]]...") gives
// this node, which answers to any of node_names (e.g. "localhost" and its
// host name). A bare host means all slots (an empty vector is returned with
// all_slots set). nullopt when the spec does not mention this node. flag
// names the option in error messages.
struct NodeSlots {
  bool all_slots = false;
  std::vector<int> slots;
};
Expected<std::optional<NodeSlots>> slots_for_node(std::string_view spec, std::string_view flag,
                                                  const std::vector<std::string>& node_names);

// Applies the flags to visible, keeping the order the flags give (--gpu_ids
// 2,0 puts position 2 first, as CUDA_VISIBLE_DEVICES=2,0 would). Which flags
// may be combined is config's decision, made before any device is probed
// (config/build_options.cpp); here the first given of --gpu_ids, --num_gpus,
// --include, --exclude selects (a hostfile's --num_gpus N leaves this host's
// first N slots in --include, the same devices). Every problem is
// ErrorCode::usage naming the flag and the entry: a position past the end, a
// duplicate, a selection that leaves nothing.
Expected<std::vector<Candidate>> select_devices(const std::vector<Candidate>& visible,
                                                const SelectionFlags& flags,
                                                const std::vector<std::string>& node_names);

}  // namespace gangrun::placement
