#include "config/layering.hpp"

#include "config/accelerate/accelerate_config_file.hpp"
#include "config/accelerate/accelerate_modes.hpp"
#include "config/accelerate/accelerate_values.hpp"
#include "config/config_file.hpp"
#include "config/hosts/hostfile.hpp"
#include "config/job_values.hpp"
#include "config/option_values.hpp"
#include "schedulers/mpi_job.hpp"
#include "util/host.hpp"
#include "util/strings.hpp"

#include <sys/stat.h>

#include <limits>
#include <optional>
#include <stdexcept>

namespace gangrun::config {

namespace {

constexpr std::string_view k_gangrun_prefix = "GANGRUN_";
constexpr std::string_view k_pet_prefix = "PET_";

// The highest layer's text per option, before the layers below are consulted.
using Partial = std::map<std::string, LayeredValue, std::less<>>;

Partial from_command_line(const std::vector<CommandLineValue>& command_line, Problems& problems) {
  Partial values;
  std::map<std::string, int, std::less<>> counts;
  for (const CommandLineValue& given : command_line) {
    const OptionSpec& spec = *given.spec;
    if (spec.command_line_only) continue;
    std::string text = given.text;
    if (spec.kind == OptionKind::counter) {
      Expected<int> count = parse_count(given.text);
      if (!count) {
        problems.add(Error(ErrorCode::usage, given.spelling + ": " + count.error().message()));
        continue;
      }
      // Saturates: -v=2147483647 -v must not wrap around to -q.
      int& total = counts[std::string(spec.name)];
      total = *count > std::numeric_limits<int>::max() - total ? std::numeric_limits<int>::max()
                                                               : total + *count;
      text = std::to_string(total);
    }
    values[std::string(spec.name)] = LayeredValue{
        .text = text,
        .source = Source::command_line,
        .where = given.spelling,
        .given = spec.kind == OptionKind::value ? given.spelling + " " + text
                                                : given.spelling + "=" + text,
    };
  }
  return values;
}

// An environment variable's value for one option; empty values of options
// that take a value count as unset (a shell's "export X=" clears, not sets).
std::optional<LayeredValue> from_env(const OptionSpec& spec, const EnvMap& env,
                                     std::string_view prefix, Source source) {
  std::string variable = env_name(prefix, spec.name);
  std::optional<std::string> text = env_lookup(env, variable);
  if (!text) return std::nullopt;
  if (spec.kind == OptionKind::value && strings::trim(*text).empty()) return std::nullopt;
  return LayeredValue{
      .text = *text, .source = source, .where = variable, .given = variable + "=" + *text};
}

// Checks that a config entry's JSON type fits the option it names.
Expected<void> check_config_type(const OptionSpec& spec, const ConfigEntry& entry,
                                 const std::string& where) {
  using Type = ConfigEntry::Type;
  switch (spec.kind) {
    case OptionKind::flag:
      if (entry.type != Type::boolean) return fail_usage(where + ": expected true or false");
      break;
    case OptionKind::counter:
      if (entry.type == Type::string) return fail_usage(where + ": expected a number or a boolean");
      break;
    case OptionKind::value:
      if (entry.type == Type::boolean) return fail_usage(where + ": expected a string or a number");
      break;
  }
  return {};
}

// A file that cannot be read is one problem; each entry that does not fit is
// one more, and is left out so that the layers below decide its option.
Partial from_json_config(const std::string& path, Problems& problems) {
  Partial values;
  Expected<std::vector<ConfigEntry>> entries = load_config_file(path);
  if (!problems.keep(entries)) return values;
  std::map<std::string, std::string, std::less<>> key_of_option;
  for (const ConfigEntry& entry : *entries) {
    const std::string where = path + ": key \"" + entry.key + "\"";
    const OptionSpec* spec = find_option(entry.key);
    if (spec == nullptr) {
      problems.add(Error(ErrorCode::usage, where +
                                               ": unknown option (keys are long option names such "
                                               "as \"nproc_per_node\" or \"master-port\")"));
      continue;
    }
    if (spec->command_line_only || spec->name == opt::config || spec->name == opt::config_file) {
      problems.add(
          Error(ErrorCode::usage, where + ": --" + entry.key + " cannot be set in a config file"));
      continue;
    }
    auto [previous, inserted] = key_of_option.emplace(std::string(spec->name), entry.key);
    if (!inserted) {
      problems.add(Error(ErrorCode::usage, where + ": sets --" + std::string(spec->name) +
                                               " again (key \"" + previous->second +
                                               "\" already does)"));
      continue;
    }
    if (!problems.keep(check_config_type(*spec, entry, where))) continue;
    values[std::string(spec->name)] = LayeredValue{
        .text = entry.text,
        .source = Source::json_config,
        .where = where,
        .given = "\"" + entry.key + "\": " + entry.text + " in " + path,
    };
  }
  return values;
}

// The flags that choose accelerate's launcher; a config file's
// distributed_type stands back when one of them is given above it.
bool mode_given_above(const Partial& command_line, const EnvMap& env) {
  for (const AccelerateMode& mode : k_accelerate_modes) {
    if (!mode.outranks_config_file) continue;
    std::string_view name = mode.option;
    const OptionSpec& spec = option_row(name);
    std::optional<LayeredValue> value;
    if (auto it = command_line.find(name); it != command_line.end()) value = it->second;
    if (!value) value = from_env(spec, env, k_gangrun_prefix, Source::gangrun_env);
    if (!value) value = from_env(spec, env, k_pet_prefix, Source::pet_env);
    if (value && parse_bool(value->text).value_or(true)) return true;
  }
  return false;
}

// accelerate's YAML config: --config_file (or GANGRUN_CONFIG_FILE,
// PET_CONFIG_FILE), else accelerate's default file where accelerate launch
// would read it: when the command line uses one of accelerate's own flags
// and not --cpu. A torchrun-style line never reads it, so that a default
// config left by accelerate config cannot change what it does.
void from_accelerate_config(const Partial& cli, const EnvMap& env,
                            std::optional<LayeredValue>& config_file, Partial& values,
                            Problems& problems) {
  const OptionSpec& spec = option_row(opt::config_file);
  if (auto it = cli.find(opt::config_file); it != cli.end()) {
    config_file = it->second;
  } else if (auto value = from_env(spec, env, k_gangrun_prefix, Source::gangrun_env)) {
    config_file = value;
  } else if (auto pet = from_env(spec, env, k_pet_prefix, Source::pet_env)) {
    config_file = pet;
  }
  if (config_file) {
    if (strings::trim(config_file->text).empty()) {
      problems.add(Error(ErrorCode::usage, config_file->where + ": empty file name"));
      return;
    }
  } else {
    auto cpu = cli.find(opt::cpu);
    if (!speaks_accelerate(cli) ||
        (cpu != cli.end() && parse_bool(cpu->second.text).value_or(true))) {
      return;
    }
    std::optional<std::string> path = default_accelerate_config_path(env);
    struct stat info {};
    if (!path || ::stat(path->c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return;
    config_file = LayeredValue{.text = *path,
                               .source = Source::accelerate_config,
                               .where = *path,
                               .given = "accelerate's default config " + *path};
  }
  Expected<std::vector<AccelerateConfigEntry>> entries = load_accelerate_config(config_file->text);
  if (!problems.keep(entries)) return;
  const bool mode_given = mode_given_above(cli, env);
  for (const AccelerateConfigEntry& entry : *entries) {
    if (entry.from_distributed_type && mode_given) continue;
    const OptionSpec& option = option_row(entry.option);  // the loader keeps known options only
    values[entry.option] = LayeredValue{
        .text = entry.text,
        .source = Source::accelerate_config,
        .where = config_file->text + ": key \"" + entry.key + "\"",
        .given = display_name(option) + " " + entry.text + " (\"" + entry.key + "\" in " +
                 config_file->text + ")",
        .file_key = entry.key,
        .file_position = entry.position,
    };
  }
}

LayeredValue from_default(const OptionSpec& spec, std::string_view text) {
  const std::string name = display_name(spec);
  return LayeredValue{.text = std::string(text),
                      .source = Source::default_value,
                      .where = name + " (default)",
                      .given = name + " " + std::string(text) + " (default)"};
}

// The config file's path: --config, else GANGRUN_CONFIG, else PET_CONFIG.
std::optional<LayeredValue> config_path(const Partial& command_line, const EnvMap& env) {
  if (auto it = command_line.find(opt::config); it != command_line.end()) return it->second;
  const OptionSpec& spec = option_row(opt::config);
  if (auto value = from_env(spec, env, k_gangrun_prefix, Source::gangrun_env)) return value;
  return from_env(spec, env, k_pet_prefix, Source::pet_env);
}

}  // namespace

const LayeredValue& value_of(const LayeredValues& values, std::string_view name) {
  auto it = values.find(name);
  if (it == values.end()) {
    throw std::logic_error("option " + std::string(name) + " has no value where it always has one");
  }
  return it->second;
}

std::string env_name(std::string_view prefix, std::string_view snake_name) {
  return std::string(prefix) + strings::to_upper(snake_name);
}

Expected<Layers> layer_values(const std::vector<CommandLineValue>& command_line,
                              const EnvMap& env) {
  Problems problems;
  Layers layers = layer_values(command_line, env, problems);
  GANGRUN_TRY(problems.result());
  return layers;
}

LayeredValue from_job_variables(std::string text, std::string_view option, std::string origin,
                                Source source) {
  std::string given = "--" + std::string(option) + " " + text + " (from " + origin + ")";
  return LayeredValue{
      .text = std::move(text), .source = source, .where = std::move(origin), .given = given};
}

namespace {

constexpr UserFileKind k_node_file_kind{.name = "the job's node file",
                                        .reads = "a scheduler's node file lists one host per line",
                                        .max_bytes = k_max_hostfile_bytes,
                                        .holds = "a node file holds a line per slot of the job"};

// The job gangrun runs in (schedulers/job_readers.cpp decides which system
// is asked first).
void read_job(const EnvMap& env, bool worker_per_task, Layers& layers, Problems& problems) {
  schedulers::Context context{
      .read_file = [](const std::string& path) { return read_user_file(path, k_node_file_kind); },
      .host_name = host::host_name(),
      .worker_per_task = worker_per_task};
  Expected<std::optional<schedulers::Job>> found = schedulers::read_job(env, context);
  if (problems.keep(found)) layers.job = std::move(*found);
}

}  // namespace

Layers layer_values(const std::vector<CommandLineValue>& command_line, const EnvMap& env,
                    Problems& problems) {
  const Partial cli = from_command_line(command_line, problems);

  Partial file;
  std::optional<LayeredValue> config = config_path(cli, env);
  if (config) {
    if (strings::trim(config->text).empty()) {
      problems.add(Error(ErrorCode::usage, config->where + ": empty file name"));
    } else {
      file = from_json_config(config->text, problems);
    }
  }
  // accelerate's YAML config sits below gangrun's own --config file.
  Partial accelerate_file;
  std::optional<LayeredValue> config_file;
  from_accelerate_config(cli, env, config_file, accelerate_file, problems);

  // The value an option has from the layers above the job's: the command
  // line, GANGRUN_*, PET_*, the config file. The launcher decides whether the
  // job is a layer at all, so it is looked up before the layers are merged.
  auto given_above_job = [&](const OptionSpec& spec) -> std::optional<LayeredValue> {
    if (auto it = cli.find(spec.name); it != cli.end()) return it->second;
    if (auto value = from_env(spec, env, k_gangrun_prefix, Source::gangrun_env)) return value;
    if (auto pet = from_env(spec, env, k_pet_prefix, Source::pet_env)) return pet;
    if (auto in_file = file.find(spec.name); in_file != file.end()) return in_file->second;
    if (auto in_yaml = accelerate_file.find(spec.name); in_yaml != accelerate_file.end()) {
      return in_yaml->second;
    }
    return std::nullopt;
  };
  auto given_by_name = [&](std::string_view name) { return given_above_job(option_row(name)); };
  Layers layers;
  Partial from_job;  // the job's layer: Slurm's, or another system's
  std::optional<LayeredValue> launcher = given_by_name(opt::launcher);
  std::optional<LayeredValue> per_task = given_by_name(opt::worker_per_task);
  bool worker_per_task = per_task && parse_bool(per_task->text).value_or(false);
  if (!launcher || parse_launcher(launcher->text) != Options::Launcher::local) {
    read_job(env, worker_per_task, layers, problems);
  }
  std::optional<Partial> job_values;
  if (layers.job) {
    // A job whose variables do not read is one problem; its layer is left out.
    Expected<Partial> read = job_layer(*layers.job, worker_per_task);
    if (problems.keep(read)) job_values = std::move(*read);
  }
  if (job_values) {
    from_job = std::move(*job_values);
    // The job's values stand back where the user chose what they would contradict.
    auto user_set = [&](std::string_view name) {
      std::optional<LayeredValue> value = given_by_name(name);
      return value &&
             (option_row(name).kind != OptionKind::flag || parse_bool(value->text).value_or(true));
    };
    if (user_set(opt::standalone)) from_job.clear();
    if (user_set(opt::rdzv_endpoint)) {
      from_job.erase(std::string(opt::master_addr));
      from_job.erase(std::string(opt::master_port));
    }
    if (user_set(opt::num_processes) || user_set(opt::num_gpus))
      from_job.erase(std::string(opt::nproc_per_node));
  }

  LayeredValues& values = layers.values;
  for (const OptionSpec& spec : option_table()) {
    if (spec.command_line_only) continue;
    const std::string name(spec.name);
    std::optional<LayeredValue> chosen;
    if (name == opt::config) {
      chosen = config;
    } else if (name == opt::config_file) {
      chosen = config_file;
    } else if (auto given = given_above_job(spec)) {
      chosen = std::move(given);
    } else if (auto in_job = from_job.find(name); in_job != from_job.end()) {
      chosen = in_job->second;
    } else if (!spec.default_text.empty()) {
      chosen = from_default(spec, spec.default_text);
    } else if (spec.kind == OptionKind::flag) {
      chosen = from_default(spec, "false");  // a flag not given is off
    }
    if (chosen) values.emplace(name, std::move(*chosen));
  }
  return layers;
}

}  // namespace gangrun::config
