// The only file that includes yaml-cpp.
#include "config/accelerate/accelerate_config_file.hpp"

#include "config/accelerate/accelerate_modes.hpp"
#include "config/config_file.hpp"
#include "config/option_table.hpp"
#include "util/strings.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

namespace gangrun::config {

namespace {

// Top-level keys accelerate launch does not copy into its arguments: their
// flags have defaults, so the file's value is never used (launch.py,
// _validate_launch_command), or they serve TPU pods only.
const std::set<std::string, std::less<>>& keys_accelerate_ignores() {
  static const std::set<std::string, std::less<>> keys = {
      "rdzv_backend", "same_network",    "enable_cpu_affinity", "downcast_bf16", "tpu_name",
      "tpu_zone",     "tpu_use_cluster", "tpu_use_sudo",        "command_file",  "commands",
      "tpu_vm",       "tpu_env"};
  return keys;
}

// Top-level keys with one value, and the option each sets.
const std::map<std::string, std::string_view, std::less<>>& scalar_keys() {
  static const std::map<std::string, std::string_view, std::less<>> keys = {
      {"mixed_precision", opt::mixed_precision},
      {"use_cpu", opt::cpu},
      {"debug", opt::debug},
      {"num_processes", opt::num_processes},
      {"machine_rank", opt::node_rank},
      {"num_machines", opt::nnodes},
      {"gpu_ids", opt::gpu_ids},
      {"main_process_ip", opt::master_addr},
      {"main_process_port", opt::master_port},
      {"main_training_function", opt::main_training_function},
  };
  return keys;
}

// The sections, and the prefix accelerate puts before a key that lacks it.
const std::map<std::string, std::string, std::less<>>& section_prefixes() {
  static const std::map<std::string, std::string, std::less<>> sections = {
      {"dynamo_config", "dynamo_"}, {"deepspeed_config", ""},   {"fsdp_config", "fsdp_"},
      {"fp8_config", "fp8_"},       {"megatron_lm_config", ""}, {"parallelism_config", ""},
      {"mpirun_config", ""},
  };
  return sections;
}

// PyYAML's safe_load reads these plain scalars as booleans (YAML 1.1).
std::optional<bool> yaml_bool(const YAML::Node& node) {
  if (node.Tag() != "?") return std::nullopt;  // quoted: a string
  const std::string lower = strings::to_lower(node.Scalar());
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

bool yaml_null(const YAML::Node& node) {
  if (node.IsNull()) return true;
  return node.IsScalar() && node.Tag() == "?" &&
         (node.Scalar() == "~" || strings::to_lower(node.Scalar()) == "null");
}

// Every key and scalar of the file, the ones accelerate ignores too, so that
// no string with a NUL ("\0" in a double-quoted scalar) reaches an option
// however the mapping below changes. `key` is the path to `node`, as the
// mapper names keys ("deepspeed_config.zero_stage", "tpu_env[1]").
Expected<void> refuse_nul_in_tree(const YAML::Node& node, const std::string& key,
                                  const std::string& path) {
  auto where = [&](const std::string& at) { return path + ": key \"" + printable_key(at) + "\""; };
  if (node.IsScalar()) return refuse_nul(node.Scalar(), where(key), "the value");
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      GANGRUN_TRY(refuse_nul_in_tree(node[i], key + "[" + std::to_string(i) + "]", path));
    }
  }
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string name = item.first.IsScalar() ? item.first.Scalar() : "?";
      const std::string at = key.empty() ? name : key + "." + name;
      GANGRUN_TRY(refuse_nul(name, where(at), "the key"));
      GANGRUN_TRY(refuse_nul_in_tree(item.second, at, path));
    }
  }
  return {};
}

class Mapper {
 public:
  explicit Mapper(const std::string& path) : path_(path) {}

  Expected<void> map_root(const YAML::Node& root) {
    for (const auto& item : root) {
      const std::string key = item.first.as<std::string>();
      const YAML::Node& value = item.second;
      if (keys_accelerate_ignores().contains(key) || yaml_null(value)) continue;
      if (key == "compute_environment") {
        GANGRUN_TRY(check_compute_environment(key, value));
      } else if (key == "distributed_type") {
        GANGRUN_TRY(map_distributed_type(key, value));
      } else if (auto option = scalar_keys().find(key); option != scalar_keys().end()) {
        if (key == "num_processes" && value.IsScalar() && value.Scalar() == "-1") continue;
        GANGRUN_TRY(add(std::string(option->second), key, value));
      } else if (auto section = section_prefixes().find(key); section != section_prefixes().end()) {
        GANGRUN_TRY(map_section(key, section->second, value));
      } else {
        return fail_usage(where(key) +
                          ": not a key of accelerate's config file (accelerate launch refuses "
                          "unknown keys too)");
      }
    }
    return {};
  }

  std::vector<AccelerateConfigEntry> take() { return std::move(entries_); }

 private:
  std::string where(const std::string& key) const { return path_ + ": key \"" + key + "\""; }

  Expected<std::string> scalar(const std::string& key, const YAML::Node& value) const {
    if (!value.IsScalar()) return fail_usage(where(key) + ": expected a single value");
    return value.Scalar();
  }

  Expected<void> check_compute_environment(const std::string& key, const YAML::Node& value) {
    GANGRUN_TRY_ASSIGN(text, scalar(key, value));
    if (*text == "LOCAL_MACHINE") return {};
    if (*text == "AMAZON_SAGEMAKER") {
      return fail_usage(where(key) +
                        ": AMAZON_SAGEMAKER: gangrun cannot honour it: SageMaker launches are "
                        "accelerate's own; use accelerate launch");
    }
    return fail_usage(where(key) + ": unknown compute environment '" + *text +
                      "' (expected LOCAL_MACHINE)");
  }

  Expected<void> map_distributed_type(const std::string& key, const YAML::Node& value) {
    GANGRUN_TRY_ASSIGN(text, scalar(key, value));
    static const std::set<std::string, std::less<>> one_process = {"NO", "MULTI_CPU"};
    static const std::set<std::string, std::less<>> multi = {
        "MULTI_GPU",  "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA",
        "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU", "MULTI_NEURON"};
    std::string option;
    if (one_process.contains(*text)) return {};
    if (multi.contains(*text)) option = opt::multi_gpu;
    for (const AccelerateMode& mode : k_accelerate_modes) {
      if (!mode.distributed_type.empty() && *text == mode.distributed_type) option = mode.option;
    }
    if (*text == "XLA" || *text == "TPU") {
      return fail_usage(where(key) + ": " + *text +
                        ": gangrun cannot honour it: TPU training runs through torch_xla's "
                        "launcher; use accelerate launch for TPUs");
    }
    if (option.empty()) {
      return fail_usage(where(key) + ": unknown distributed type '" + *text + "'");
    }
    push(option, key, "true", true);
    return {};
  }

  Expected<void> map_section(const std::string& section, const std::string& prefix,
                             const YAML::Node& value) {
    if (!value.IsMap())
      return fail_usage(where(section) + ": expected a mapping of keys to values");
    if (section == "parallelism_config" && value.size() > 0) {
      push(std::string(opt::use_parallelism_config), section, "true", true);
    }
    for (const auto& item : value) {
      std::string name = item.first.as<std::string>();
      const std::string key = section + "." + name;
      if (yaml_null(item.second)) continue;
      if (!name.starts_with(prefix)) name = prefix + name;
      // accelerate sets any key of a section as an argument; one that no
      // flag reads changes nothing.
      if (find_option_by_name(name) == nullptr) continue;
      GANGRUN_TRY(add(name, key, item.second));
    }
    return {};
  }

  Expected<void> add(const std::string& option, const std::string& key, const YAML::Node& value) {
    GANGRUN_TRY_ASSIGN(text, scalar(key, value));
    const OptionSpec* spec = find_option_by_name(option);
    if (spec == nullptr) return fail_usage(where(key) + ": sets no option gangrun knows");
    std::optional<bool> flag = yaml_bool(value);
    if (spec->kind == OptionKind::flag) {
      if (!flag) return fail_usage(where(key) + ": expected true or false");
      push(option, key, *flag ? "true" : "false", false);
    } else {
      push(option, key, flag ? (*flag ? "True" : "False") : *text, false);
    }
    return {};
  }

  void push(std::string option, const std::string& key, std::string text, bool mode) {
    entries_.push_back(AccelerateConfigEntry{.option = std::move(option),
                                             .key = key,
                                             .text = std::move(text),
                                             .position = static_cast<int>(entries_.size()),
                                             .from_distributed_type = mode});
  }

  const std::string& path_;
  std::vector<AccelerateConfigEntry> entries_;
};

}  // namespace

Expected<std::vector<AccelerateConfigEntry>> parse_accelerate_config_text(const std::string& text,
                                                                          const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    return fail_usage(path + ": not valid YAML: line " + std::to_string(error.mark.line + 1) +
                      ", column " + std::to_string(error.mark.column + 1) + ": " + error.msg);
  }
  if (!root.IsMap()) {
    return fail_usage(path +
                      ": expected accelerate's config, a YAML mapping of keys to values (e.g. "
                      "num_processes: 2)");
  }
  Mapper mapper(path);
  try {
    GANGRUN_TRY(refuse_nul_in_tree(root, "", path));
    GANGRUN_TRY(mapper.map_root(root));
  } catch (const YAML::Exception& error) {
    return fail_usage(path + ": " + error.msg);
  }
  return mapper.take();
}

Expected<std::vector<AccelerateConfigEntry>> load_accelerate_config(const std::string& path) {
  GANGRUN_TRY_ASSIGN(text, read_user_file(path, config_file_kind("--config_file reads YAML")));
  return parse_accelerate_config_text(*text, path);
}

std::optional<std::string> default_accelerate_config_path(const EnvMap& env) {
  auto set = [&](const char* name) -> std::optional<std::string> {
    std::optional<std::string> value = env_lookup(env, name);
    if (value && !value->empty()) return value;
    return std::nullopt;
  };
  std::string home_dir;
  if (auto hf_home = set("HF_HOME")) {
    home_dir = *hf_home;
  } else if (auto cache = set("XDG_CACHE_HOME")) {
    home_dir = *cache + "/huggingface";
  } else if (auto home = set("HOME")) {
    home_dir = *home + "/.cache/huggingface";
  } else {
    return std::nullopt;
  }
  if (home_dir.starts_with("~/")) {
    std::optional<std::string> home = set("HOME");
    if (!home) return std::nullopt;
    home_dir = *home + home_dir.substr(1);
  }
  return home_dir + "/accelerate/default_config.yaml";
}

}  // namespace gangrun::config
