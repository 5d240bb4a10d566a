#include "commands/devices_command.hpp"

#include "accel/cpu_backend.hpp"
#include "accel/report_json.hpp"
#include "launch/node_devices.hpp"
#include "launch/plan.hpp"
#include "logging/logging.hpp"
#include "report/run_report.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace gangrun::commands {
namespace {

using launch::node_devices;
using launch::NodeProbes;
using launch::place_workers;
using launch::probe_node;
using launch::ProbeScope;
using launch::view_of;

struct Section {
  accel::DeviceKind kind;
  std::string title;  // "CUDA", "Intel XPU (Level Zero)"
  const std::optional<accel::BackendReport>* report;
  Expected<placement::NodeView> view = fail(ErrorCode::usage, "not probed");
};

std::string pci_text(const std::optional<accel::PciAddress>& pci) {
  if (!pci) return "-";
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci->domain, pci->bus, pci->device,
                     pci->function);
}

std::string memory_text(std::uint64_t bytes) {
  if (bytes == 0) return "-";
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string or_dash(const std::string& text) { return text.empty() ? "-" : text; }

nlohmann::json devices_json(accel::DeviceKind kind, const std::vector<accel::Device>& devices) {
  accel::BackendReport report;
  report.kind = kind;
  report.devices = devices;
  return nlohmann::json::parse(accel::report_to_json(report))["devices"];
}

std::vector<accel::Device> devices_of(const std::vector<placement::Candidate>& candidates) {
  std::vector<accel::Device> devices;
  devices.reserve(candidates.size());
  for (const placement::Candidate& candidate : candidates) devices.push_back(candidate.device);
  return devices;
}

void print_table(std::string& out, const Section& section, const placement::NodeView& view) {
  bool tiles = section.kind == accel::DeviceKind::xpu;
  std::vector<std::vector<std::string>> rows = {
      {"#", "as " + view.variable, "name", "uuid", "pci", "memory", "arch", "units"}};
  if (tiles) rows.front().push_back("tiles");
  for (std::size_t i = 0; i < view.visible.size(); ++i) {
    const placement::Candidate& candidate = view.visible[i];
    const accel::Device& device = candidate.device;
    rows.push_back({std::to_string(i), candidate.token, or_dash(device.name), or_dash(device.uuid),
                    pci_text(device.pci), memory_text(device.memory_bytes),
                    or_dash(device.architecture),
                    device.compute_units > 0 ? std::to_string(device.compute_units) : "-"});
    if (tiles) rows.back().push_back(std::to_string(device.tiles));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c] + std::string(c + 1 < row.size() ? widths[c] - row[c].size() : 0, ' ');
    }
    out += line + "\n";
  }
}

// Devices on the node as the workers' runtime counts them: under Level Zero's
// FLAT and COMBINED hierarchies every tile is one.
std::size_t node_total(const accel::BackendReport& report, const placement::NodeView& view) {
  auto mode = view.alongside_mask.find(std::string(accel::k_ze_flat_device_hierarchy));
  if (mode == view.alongside_mask.end() || mode->second == "COMPOSITE") {
    return report.devices.size();
  }
  std::size_t leaves = 0;
  for (const accel::Device& card : report.devices) {
    leaves += card.tiles > 0 ? static_cast<std::size_t>(card.tiles) : 1;
  }
  return leaves;
}

void print_section(std::string& out, const Section& section, bool verbose) {
  const accel::BackendReport& report = **section.report;
  std::string driver = report.driver_version.empty() ? "" : ", driver " + report.driver_version;
  if (report.devices.empty()) {
    out += fmt::format("{}: no devices{}: {}\n", section.title, driver,
                       report.unavailable.value_or("none found"));
    return;
  }
  if (!section.view) {
    out += fmt::format("{}: {} device(s){}, but {}\n", section.title, report.devices.size(), driver,
                       section.view.error().message());
    return;
  }
  const placement::NodeView& view = *section.view;
  out += fmt::format("{}: {} of {} device(s) visible{}\n", section.title, view.visible.size(),
                     node_total(report, view), driver);
  std::vector<std::string> shaped;
  for (const auto& [name, value] : view.shaped_by) shaped.push_back(name + "=" + value);
  out += "  " + (shaped.empty() ? "no visibility variable set" : strings::join(shaped, " ")) + "\n";
  for (const std::string& note : view.notes) out += "  note: " + note + "\n";
  if (!view.visible.empty()) print_table(out, section, view);
  if (verbose && view.visible.size() < report.devices.size()) {
    out += "  all devices, unfiltered:\n";
    for (const accel::Device& device : report.devices) {
      out += fmt::format("    {} {} {}\n", device.index, device.name, or_dash(device.uuid));
    }
  }
}

std::string cpu_line(const accel::BackendReport& report) {
  std::vector<int> cpus;
  for (const accel::Device& cpu : report.devices) cpus.push_back(cpu.index);
  std::string model = report.devices.empty() ? "" : report.devices.front().name;
  std::string arch = report.devices.empty() ? "" : report.devices.front().architecture;
  return fmt::format("CPU: {} usable ({}){}{}\n", cpus.size(), accel::cpu_list_text(cpus),
                     model.empty() ? "" : ", " + model, arch.empty() ? "" : ", " + arch);
}

struct LaunchShown {
  std::optional<std::string> error;
  std::string kind;  // the accelerator's word; empty when the options are wrong
  int workers = 0;
  std::vector<EnvMap> envs;
};

LaunchShown show_launch(const config::Options& options, const EnvMap& env,
                        const NodeProbes& probes) {
  LaunchShown shown;
  auto devices = node_devices(options, env, probes);
  if (!devices) {
    shown.error = devices.error().message();
    return shown;
  }
  shown.kind = accel::to_string(devices->kind);
  auto placed = place_workers(options, *devices);
  if (!placed) {
    shown.error = placed.error().message();
    return shown;
  }
  shown.workers = placed->workers;
  shown.envs = std::move(placed->device_envs);
  return shown;
}

std::string launch_text(const config::Options& options, const LaunchShown& launch) {
  if (launch.error) return "launch: " + *launch.error + "\n";
  std::string out = fmt::format(
      "launch with these options: {} worker(s) on {}, --visible-devices {}\n", launch.workers,
      launch.kind,
      options.visible_devices == config::VisibleDevices::per_rank ? "per-rank" : "shared");
  for (std::size_t i = 0; i < launch.envs.size(); ++i) {
    std::vector<std::string> vars;
    for (const auto& [name, value] : launch.envs[i]) vars.push_back(name + "=" + value);
    out += fmt::format(
        "  local_rank {}: {}\n", i,
        vars.empty() ? "inherits gangrun's visibility unchanged" : strings::join(vars, " "));
  }
  return out;
}

nlohmann::json section_json(const Section& section) {
  const accel::BackendReport& report = **section.report;
  nlohmann::json json = nlohmann::json::parse(accel::report_to_json(report));
  json["kind"] = accel::to_string(section.kind);
  json["name"] = section.title;
  json["visible"] = nullptr;
  json["error"] = nullptr;
  if (report.devices.empty()) return json;
  if (!section.view) {
    json["error"] = section.view.error().message();
    return json;
  }
  const placement::NodeView& view = *section.view;
  json["variable"] = view.variable;
  json["variables"] = nlohmann::json::object();
  for (const auto& [name, value] : view.shaped_by) json["variables"][name] = value;
  json["notes"] = view.notes;
  nlohmann::json visible = devices_json(report.kind, devices_of(view.visible));
  for (std::size_t i = 0; i < view.visible.size(); ++i) {
    visible[i]["visible_index"] = i;
    visible[i]["token"] = view.visible[i].token;
  }
  json["visible"] = visible;
  return json;
}

}  // namespace

Expected<int> run_devices_command(const config::DevicesRequest& request, const EnvMap& env) {
  const config::Options& options = request.options;
  logging::setup_logging(options.verbosity, options.color);
  NodeProbes probes = probe_node(options, env, ProbeScope::all);
  std::vector<Section> sections = {{accel::DeviceKind::cuda, "CUDA", &probes.cuda},
                                   {accel::DeviceKind::xpu, "Intel XPU (Level Zero)", &probes.xpu},
                                   {accel::DeviceKind::rocm, "AMD ROCm", &probes.rocm}};
  bool malformed = false;
  for (Section& section : sections) {
    if (!(*section.report)->devices.empty()) {
      section.view = view_of(section.kind, probes, env, options);
      malformed = malformed || !section.view;
    }
  }
  LaunchShown launch = show_launch(options, env, probes);
  malformed = malformed || launch.error;

  if (options.json) {
    nlohmann::json backends = nlohmann::json::array();
    for (const Section& section : sections) backends.push_back(section_json(section));
    nlohmann::json cpu = nlohmann::json::parse(accel::report_to_json(*probes.cpu));
    cpu["kind"] = accel::to_string(accel::DeviceKind::cpu);
    backends.push_back(cpu);
    nlohmann::json workers = nlohmann::json::array();
    for (std::size_t i = 0; i < launch.envs.size(); ++i) {
      workers.push_back({{"local_rank", i}, {"env", launch.envs[i]}});
    }
    nlohmann::json launch_json = {
        {"accelerator", launch.kind},
        {"workers", launch.workers},
        {"visible_devices",
         options.visible_devices == config::VisibleDevices::per_rank ? "per-rank" : "shared"},
        {"masks", workers},
        {"error", launch.error ? nlohmann::json(*launch.error) : nlohmann::json()}};
    std::cout << report::json_text(nlohmann::json{{"backends", backends}, {"launch", launch_json}})
              << '\n';
  } else {
    std::string out;
    for (const Section& section : sections) print_section(out, section, options.verbosity > 0);
    out += cpu_line(*probes.cpu);
    out += "\n" + launch_text(options, launch);
    std::cout << out << std::flush;
  }
  return malformed ? exit_codes::k_usage : exit_codes::k_success;
}

}  // namespace gangrun::commands
