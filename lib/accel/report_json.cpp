#include "accel/report_json.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace gangrun::accel {

namespace {

using nlohmann::json;

const char* kind_name(DeviceKind kind) { return to_string(kind); }

DeviceKind kind_from_name(const std::string& text) {
  if (auto kind = parse_device_kind(text)) return *kind;
  throw std::invalid_argument("unknown device kind \"" + text + "\"");
}

json device_to_json(const Device& device) {
  json out = {
      {"kind", kind_name(device.kind)},
      {"index", device.index},
      {"name", device.name},
      {"uuid", device.uuid},
      {"pci", nullptr},
      {"memory_bytes", device.memory_bytes},
      {"architecture", device.architecture},
      {"compute_units", device.compute_units},
      {"tiles", device.tiles},
      {"mig", device.mig},
  };
  if (device.pci) {
    out["pci"] = {{"domain", device.pci->domain},
                  {"bus", device.pci->bus},
                  {"device", device.pci->device},
                  {"function", device.pci->function}};
  }
  return out;
}

Device device_from_json(const json& in) {
  Device device;
  device.kind = kind_from_name(in.at("kind").get<std::string>());
  device.index = in.at("index").get<int>();
  device.name = in.at("name").get<std::string>();
  device.uuid = in.at("uuid").get<std::string>();
  if (const json& pci = in.at("pci"); !pci.is_null()) {
    device.pci =
        PciAddress{pci.at("domain").get<std::uint32_t>(), pci.at("bus").get<std::uint32_t>(),
                   pci.at("device").get<std::uint32_t>(), pci.at("function").get<std::uint32_t>()};
  }
  device.memory_bytes = in.at("memory_bytes").get<std::uint64_t>();
  device.architecture = in.at("architecture").get<std::string>();
  device.compute_units = in.at("compute_units").get<int>();
  device.tiles = in.at("tiles").get<int>();
  device.mig = in.at("mig").get<bool>();
  return device;
}

}  // namespace

std::string report_to_json(const BackendReport& report) {
  json devices = json::array();
  for (const Device& device : report.devices) devices.push_back(device_to_json(device));
  json out = {
      {"kind", kind_name(report.kind)},
      {"driver_version", report.driver_version},
      {"unavailable", nullptr},
      {"devices", std::move(devices)},
  };
  if (report.unavailable) out["unavailable"] = *report.unavailable;
  // Replace invalid UTF-8 (a driver's device name is raw bytes) rather than throw.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<BackendReport> report_from_json(std::string_view text) {
  try {
    json in = json::parse(text);
    BackendReport report;
    report.kind = kind_from_name(in.at("kind").get<std::string>());
    report.driver_version = in.at("driver_version").get<std::string>();
    if (const json& why = in.at("unavailable"); !why.is_null()) {
      report.unavailable = why.get<std::string>();
    }
    const json& devices = in.at("devices");
    if (!devices.is_array()) throw std::invalid_argument("\"devices\" is not an array");
    for (const json& device : devices) report.devices.push_back(device_from_json(device));
    return report;
  } catch (const json::exception& error) {
    return fail(ErrorCode::io, std::string("malformed device report: ") + error.what());
  } catch (const std::invalid_argument& error) {
    return fail(ErrorCode::io, std::string("malformed device report: ") + error.what());
  }
}

}  // namespace gangrun::accel
