// Option values from every layer, reduced to one text per option:
// command line > GANGRUN_<NAME> > PET_<NAME> > the --config file >
// accelerate's YAML config (--config_file, or accelerate's default config
// when the command line uses accelerate's own flags) > the job's (Slurm's
// or another system's, unless --launcher local; config/job_values.hpp) > the table's
// default. NAME is the option's snake_case name upper-cased (GANGRUN_NNODES,
// PET_NPROC_PER_NODE). Values stay text here; build_options.cpp types them.
#pragma once

#include "config/option_table.hpp"
#include "config/options.hpp"
#include "config/problems.hpp"
#include "schedulers/job.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gangrun::config {

// One option as given on the command line, in command-line order.
struct CommandLineValue {
  const OptionSpec* spec = nullptr;
  std::string spelling;  // as the user typed it: "--nproc-per-node", "-n"
  std::string text;      // flags: "true" or the "--flag=VALUE" text
};

// The value that won for one option.
struct LayeredValue {
  std::string text;
  Source source = Source::default_value;
  // Where it came from, to start error messages with: "--nproc-per-node",
  // "GANGRUN_NPROC_PER_NODE", "job.json: key \"nnodes\"", "default".
  std::string where;
  // The value with its origin, for messages that set two values against each
  // other: "--nnodes 2", "PET_NNODES=2", "\"nnodes\": 2 in job.json", "--nnodes 1 (default)".
  std::string given;
  // From accelerate's YAML config (config/accelerate/accelerate_config_file.hpp): the
  // key as written ("deepspeed_config.zero_stage") and its place in the file.
  std::string file_key = {};
  int file_position = -1;
};

// By snake_case option name; only options that have a value (from a layer or
// a default) appear.
using LayeredValues = std::map<std::string, LayeredValue, std::less<>>;

// The value of an option that has one in every run (a default, or a value the
// caller saw given); a missing one is a bug in gangrun, thrown as
// std::logic_error (gangrun::main reports it as an internal error).
const LayeredValue& value_of(const LayeredValues& values, std::string_view name);

// The value of an option (its opt:: name) that the user gave, from any layer;
// nullptr when it has none or only the table's default.
inline const LayeredValue* given_value(const LayeredValues& values, std::string_view name) {
  auto it = values.find(name);
  return it != values.end() && it->second.source != Source::default_value ? &it->second : nullptr;
}

// A value a scheduler's variables gave (Source::slurm or Source::scheduler);
// `origin` says which: "SLURM_NODEID=1", "PBS_NODEFILE=/var/spool/pbs/aux/17".
LayeredValue from_job_variables(std::string text, std::string_view option, std::string origin,
                                Source source);

// "GANGRUN_NPROC_PER_NODE" for prefix "GANGRUN_" and option "nproc_per_node".
std::string env_name(std::string_view prefix, std::string_view snake_name);

struct Layers {
  LayeredValues values;
  std::optional<schedulers::Job> job;  // the job the values were read in, of any system
};

// Layers every option. On the command line the last occurrence of an option
// wins, except counters (-v), whose occurrences add up. The config file is
// the one named by --config, else GANGRUN_CONFIG, else PET_CONFIG; the
// accelerate config the one named by --config_file (likewise), else
// accelerate's default file when the command line uses one of accelerate's
// own flags and not --cpu (as accelerate launch reads it); its
// distributed_type stands back when a launcher flag (--multi_gpu,
// --use_deepspeed, ...) is given above it. Reading them is the only side effect. Slurm's values
// stand back where the user chose something they would contradict: all of them for --standalone,
// the master address and port for --rdzv_endpoint, the workers per node for
// --num_processes and --num_gpus. Usage errors name the option as spelled,
// the variable, or the file and key.
//
// Every problem is added to `problems` and layering goes on with what it could
// read: a value that does not read is left out (the layers below decide its
// option), a config file or Slurm job that does not read leaves its whole
// layer out. The caller types what came back and reports everything together.
Layers layer_values(const std::vector<CommandLineValue>& command_line, const EnvMap& env,
                    Problems& problems);

// The same, failing with the problems (as Problems::result) when there are any.
Expected<Layers> layer_values(const std::vector<CommandLineValue>& command_line, const EnvMap& env);

}  // namespace gangrun::config
