#include "placement/node_view.hpp"

#include "accel/cuda_visibility.hpp"
#include "accel/rocm_visibility.hpp"
#include "util/strings.hpp"

namespace gangrun::placement {
namespace {

constexpr const char* k_cuda_device_order = "CUDA_DEVICE_ORDER";
constexpr const char* k_ze_pci_order = "ZE_ENABLE_PCI_ID_DEVICE_ORDER";

std::optional<std::string_view> lookup(const EnvMap& env, std::string_view name) {
  auto it = env.find(std::string(name));
  if (it == env.end()) return std::nullopt;
  return std::string_view(it->second);
}

void note_if_set(NodeView& view, const EnvMap& env, std::string_view name) {
  if (auto value = lookup(env, name)) view.shaped_by.emplace_back(name, *value);
}

}  // namespace

// Several inherited MIG UUIDs, each read on its own (one per worker).
Expected<accel::CudaVisibility> each_mig_alone(std::string_view value,
                                               const std::vector<accel::Device>& all) {
  accel::CudaVisibility joined{.set = true, .devices = {}};
  for (const std::string& entry : strings::split(value, ',')) {
    auto alone = accel::check_cuda_visible_devices(strings::trim(entry), all);
    if (!alone) return tl::unexpected(alone.error());
    for (const accel::CudaVisibleDevice& device : alone->devices) {
      for (const accel::CudaVisibleDevice& earlier : joined.devices) {
        if (earlier.position == device.position) {
          return fail(ErrorCode::usage, std::string(accel::k_cuda_visible_devices) + "=" +
                                            std::string(value) + ": entry " +
                                            strings::quoted(device.entry) +
                                            " names a MIG instance an earlier entry already "
                                            "named; list each once");
        }
      }
      joined.devices.push_back(device);
    }
  }
  return joined;
}

Expected<NodeView> cuda_view(const std::vector<accel::Device>& unfiltered, const EnvMap& env,
                             bool one_mig_per_worker) {
  NodeView view;
  view.kind = accel::DeviceKind::cuda;
  view.variable = accel::k_cuda_visible_devices;
  note_if_set(view, env, accel::k_cuda_visible_devices);
  note_if_set(view, env, k_cuda_device_order);
  std::optional<std::string_view> inherited = lookup(env, accel::k_cuda_visible_devices);
  bool mig_list = inherited && accel::parse_cuda_visible_devices(*inherited).form ==
                                   accel::CudaEntryForm::mig_uuids;
  auto visibility = one_mig_per_worker && mig_list
                        ? each_mig_alone(*inherited, unfiltered)
                        : accel::check_cuda_visible_devices(inherited, unfiltered);
  if (!visibility) return tl::unexpected(visibility.error());
  for (const accel::CudaVisibleDevice& seen : visibility->devices) {
    const accel::Device& device = unfiltered[seen.position];
    view.visible.push_back({device, visibility->set ? seen.entry : std::to_string(seen.position)});
  }
  return view;
}

Expected<accel::ZeHierarchy> ze_hierarchy_in_force(const EnvMap& env,
                                                   accel::ZeHierarchy driver_default) {
  return accel::check_ze_hierarchy(lookup(env, accel::k_ze_flat_device_hierarchy), driver_default);
}

Expected<NodeView> xpu_view(const std::vector<accel::Device>& cards, accel::ZeHierarchy hierarchy,
                            const EnvMap& env) {
  NodeView view;
  view.kind = accel::DeviceKind::xpu;
  view.variable = accel::k_ze_affinity_mask;
  view.alongside_mask[std::string(accel::k_ze_flat_device_hierarchy)] = accel::to_string(hierarchy);
  view.keeps_driver_order = true;
  view.uuid_masks = false;
  note_if_set(view, env, accel::k_ze_affinity_mask);
  note_if_set(view, env, accel::k_ze_flat_device_hierarchy);
  note_if_set(view, env, k_ze_pci_order);
  auto visibility =
      accel::check_ze_affinity_mask(lookup(env, accel::k_ze_affinity_mask), cards, hierarchy);
  if (!visibility) return tl::unexpected(visibility.error());
  if (visibility->order_note) view.notes.push_back(*visibility->order_note);

  std::vector<std::size_t> first_leaf;
  std::size_t leaves = 0;
  for (const accel::Device& card : cards) {
    first_leaf.push_back(leaves);
    leaves += card.tiles > 0 ? static_cast<std::size_t>(card.tiles) : 1;
  }
  bool flat = hierarchy != accel::ZeHierarchy::composite;
  for (const accel::ZeVisibleDevice& seen : visibility->devices) {
    accel::Device device = cards[seen.card];
    if (flat) {
      // A tile is a device of its own; the card's UUID is not its.
      std::size_t tile = seen.tiles.empty() ? 0 : seen.tiles.front();
      device.index = static_cast<int>(first_leaf[seen.card] + tile);
      if (!seen.tiles.empty()) {
        device.name += " (tile " + std::to_string(tile) + ")";
        device.memory_bytes /= static_cast<std::uint64_t>(cards[seen.card].tiles);
        device.compute_units /= cards[seen.card].tiles;
        device.uuid.clear();
      }
      device.tiles = 0;
      view.visible.push_back({device, std::to_string(device.index)});
      continue;
    }
    std::string token = std::to_string(seen.card);
    if (!seen.tiles.empty() && seen.tiles.size() != static_cast<std::size_t>(device.tiles)) {
      std::vector<std::string> parts;
      for (std::uint32_t tile : seen.tiles) parts.push_back(token + "." + std::to_string(tile));
      token = strings::join(parts, ",");
      // The device is only the kept tiles: scale what the card reported.
      auto kept = static_cast<std::uint64_t>(seen.tiles.size());
      device.memory_bytes = device.memory_bytes * kept / static_cast<std::uint64_t>(device.tiles);
      device.compute_units = device.compute_units * static_cast<int>(kept) / device.tiles;
      device.tiles = static_cast<int>(kept);
    }
    view.visible.push_back({device, token});
  }
  return view;
}

Expected<NodeView> rocm_view(const std::vector<accel::Device>& gpus, const EnvMap& env) {
  accel::RocmVariables variables{
      .rocr_visible_devices = lookup(env, accel::k_rocr_visible_devices),
      .hip_visible_devices = lookup(env, accel::k_hip_visible_devices),
      .cuda_visible_devices = lookup(env, accel::k_cuda_visible_devices)};
  NodeView view;
  view.kind = accel::DeviceKind::rocm;
  view.variable = accel::k_rocr_visible_devices;
  note_if_set(view, env, accel::k_rocr_visible_devices);
  note_if_set(view, env, accel::k_hip_visible_devices);
  note_if_set(view, env, accel::k_cuda_visible_devices);
  auto visibility = accel::check_rocm_visibility(variables, gpus);
  if (!visibility) return tl::unexpected(visibility.error());

  // HIP reads its list relative to what ROCr left, and only when it is set
  // and not empty; a mask written into ROCR_VISIBLE_DEVICES would be
  // filtered again by the user's HIP list, so compose into that one instead.
  auto non_empty = [](std::optional<std::string_view> value) { return value && !value->empty(); };
  std::optional<std::string> hip_variable;
  if (non_empty(variables.hip_visible_devices)) {
    hip_variable = accel::k_hip_visible_devices;
  } else if (non_empty(variables.cuda_visible_devices)) {
    hip_variable = accel::k_cuda_visible_devices;
  }
  std::vector<std::size_t> after_rocr =
      accel::emulate_rocr_visible_devices(variables.rocr_visible_devices, gpus).devices;
  if (hip_variable) view.variable = *hip_variable;
  for (std::size_t position : visibility->devices) {
    std::size_t token = position;
    if (hip_variable) {
      for (std::size_t i = 0; i < after_rocr.size(); ++i) {
        if (after_rocr[i] == position) token = i;
      }
    }
    view.visible.push_back({gpus[position], std::to_string(token)});
  }
  return view;
}

Expected<NodeView> vendor_list_view(accel::VendorList list, const EnvMap& env) {
  std::string variable(accel::variable_of(list));
  NodeView view;
  view.kind = list == accel::VendorList::habana   ? accel::DeviceKind::hpu
              : list == accel::VendorList::ascend ? accel::DeviceKind::npu
                                                  : accel::DeviceKind::neuron;
  view.variable = variable;
  view.keeps_driver_order = list == accel::VendorList::ascend;  // the runtime wants ascending ids
  view.uuid_masks = false;
  note_if_set(view, env, variable);
  auto tokens = accel::parse_vendor_list(list, lookup(env, variable));
  if (!tokens) return tl::unexpected(tokens.error());
  for (std::size_t i = 0; i < tokens->size(); ++i) {
    accel::Device device;
    device.index = static_cast<int>(i);
    device.name = variable + " entry " + (*tokens)[i];
    view.visible.push_back({device, (*tokens)[i]});
  }
  return view;
}

}  // namespace gangrun::placement
