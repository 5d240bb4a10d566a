// The contract between preflight_worker.py, which writes the facts, and
// checks.cpp, which judges them: every member of the JSON document the head's
// worker writes (its key, its JSON types, its unit, what it means, which check
// reads it) and every environment variable the worker reads. This table is
// its one place: the judge names keys only through it, the worker's VARIABLES
// dict lists the same variables, docs/preflight.md ("The facts") prints it for
// people, and tests/unit/test_preflight_schema.cpp runs the real worker and
// holds what it wrote against it, so a key renamed on one side fails there.
#pragma once

#include <array>
#include <string_view>

namespace gangrun::preflight {

// The JSON types a member may have, as a set: nullable members add null.
namespace json_type {
inline constexpr unsigned null = 1;
inline constexpr unsigned boolean = 2;
inline constexpr unsigned integer = 4;
inline constexpr unsigned number = 8;  // any number: an integer is a number too
inline constexpr unsigned string = 16;
inline constexpr unsigned array = 32;
inline constexpr unsigned object = 64;
}  // namespace json_type

// The objects of the document; a member belongs to one of them.
enum class Object {
  none,         // a member that holds no described object
  result,       // the document: rank 0's answer (the top level)
  rank,         // one rank's facts (an element of result's ranks)
  torch,        // what importing torch said
  python,       // the workers' interpreter
  space,        // a file system's space (log_dir, shm)
  limit,        // a resource limit (open_files, memlock)
  node,         // what gangrun saw of the node (GANGRUN_PREFLIGHT_NODE, written by gangrun)
  refused,      // a value whose seal did not check (an element of result's refused)
  collectives,  // one rank's collectives (an element of result's collectives)
  gang,         // the gang's all-reduce
  pair,         // one node pair's all-reduce (an element of collectives' pairs)
};

// When a writer writes a member.
enum class Presence {
  always,        // in every object of its kind
  first_worker,  // in a rank's facts only when its local_rank is 0 (it reads the node's)
  sometimes,     // only in the case its meaning names
};

struct Field {
  Object in;  // the object it is a member of
  std::string_view key;
  unsigned types;  // json_type bits
  Presence presence;
  std::string_view unit;     // "s", "bytes", "bytes/s", or "" when it has none
  std::string_view meaning;  // what it says
  std::string_view read_by;  // the checks (checks.hpp's names) that read it, or why none does
  // An object's members, or an array's elements when they are objects.
  Object holds = Object::none;
  // An array's elements, or a map's values (an object with free keys), as json_type bits.
  unsigned elements = 0;
};

namespace schema_detail {
using namespace json_type;
constexpr Presence always = Presence::always;
constexpr Presence first = Presence::first_worker;
constexpr Presence sometimes = Presence::sometimes;
}  // namespace schema_detail

// Every member the judge may read, by object. gangrun writes node's members
// (commands/preflight_command.cpp) and passes them through the workers.
inline constexpr auto k_fields = [] {
  using namespace schema_detail;
  using O = Object;
  return std::array{
      // The document rank 0 writes (and each node's first worker copies).
      Field{O::result, "world_size", integer, always, "", "ranks in the gang", "store"},
      Field{O::result, "timeout_s", number, always, "s", "each wait's bound (--preflight-timeout)",
            "store"},
      Field{O::result, "store", string, always, "", "the job's store, host:port", "store, seals"},
      Field{O::result, "ranks", array, always, "",
            "every rank's facts by rank; null for a rank that sent none or was refused",
            "every check", O::rank, object | null},
      Field{O::result, "silent_ranks", array, always, "", "ranks that sent nothing in time",
            "store", O::none, integer},
      Field{O::result, "sealed", boolean, always, "",
            "whether the job had a key (GANGRUN_PREFLIGHT_KEY), so every value was sealed",
            "seals"},
      Field{O::result, "refused", array, always, "", "the values whose seal did not check",
            "store, seals", O::refused, object},
      Field{O::result, "collectives", array, sometimes, "",
            "every rank's collectives, by rank; when every rank imported torch and they ran",
            "clock, all-reduce, node pairs", O::collectives, object},
      Field{O::result, "collectives_error", string, sometimes, "",
            "why the collectives failed, when they ran and failed", "all-reduce"},
      Field{O::result, "collectives_skipped", string, sometimes, "",
            "why the collectives did not run, when they did not", "all-reduce"},
      Field{O::result, "this_node", integer, always, "",
            "the node rank of the worker that wrote this copy", "where the table is printed"},
      // One rank's facts.
      Field{O::rank, "rank", integer, always, "", "its global rank (RANK)", "store, seals"},
      Field{O::rank, "local_rank", integer, always, "", "its rank on its node (LOCAL_RANK)",
            "every check per node: local_rank 0 speaks for its node"},
      Field{O::rank, "node_rank", integer, always, "", "its node's rank (GROUP_RANK)",
            "every check per node"},
      Field{O::rank, "host", string, always, "", "its host name", "every check per node"},
      Field{O::rank, "pid", integer, always, "", "its process id", "none (--json's facts)"},
      Field{O::rank, "masks", object, always, "",
            "the device masks it was given (CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK, "
            "ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES), those set",
            "devices", O::none, string},
      Field{O::rank, "torch", object, always, "", "what importing torch said", "torch, devices",
            O::torch},
      Field{O::rank, "python", object, first, "", "the workers' interpreter", "torch, versions",
            O::python},
      Field{O::rank, "log_dir", object, first, "",
            "space where the logs go (GANGRUN_PREFLIGHT_LOG_DIR)", "log dir", O::space},
      Field{O::rank, "shm", object, first, "", "space of /dev/shm", "/dev/shm", O::space},
      Field{O::rank, "open_files", object, first, "", "RLIMIT_NOFILE", "open files", O::limit},
      Field{O::rank, "memlock", object, first, "", "RLIMIT_MEMLOCK", "memlock", O::limit},
      Field{O::rank, "variables", object, first, "",
            "the variables every node should share (NCCL_, GLOO_, TORCH_, CUDA_, OMP_, MKL_, "
            "FI_, UCX_, LD_, PYTHON; those gangrun sets per node or rank left out)",
            "variables", O::none, string},
      Field{O::rank, "node", object, first, "",
            "what gangrun saw of the node (GANGRUN_PREFLIGHT_NODE)", "devices, memlock", O::node},
      // torch: either error, or version and the rest.
      Field{O::torch, "error", string, sometimes, "", "why torch did not import, when it did not",
            "torch, versions"},
      Field{O::torch, "version", string, sometimes, "", "torch.__version__, when it imported",
            "torch, devices, versions"},
      Field{O::torch, "cuda", string | null, sometimes, "",
            "the CUDA torch was built for (null: a CPU build), when it imported",
            "devices, versions"},
      Field{O::torch, "gloo", boolean, sometimes, "", "whether gloo is available, when it imported",
            "none (--json's facts)"},
      Field{O::torch, "nccl_available", boolean, sometimes, "",
            "whether NCCL is available, when it imported", "none (--json's facts)"},
      Field{O::torch, "cuda_devices", integer, sometimes, "",
            "CUDA devices torch sees, when it imported", "devices"},
      Field{O::torch, "device_names", array, sometimes, "",
            "their names, when torch sees CUDA devices", "none (--json's facts)", O::none, string},
      Field{O::torch, "nccl", string, sometimes, "", "NCCL's version, when torch sees CUDA devices",
            "versions"},
      Field{O::torch, "cuda_error", string, sometimes, "",
            "why torch could not use CUDA, when it could not", "devices"},
      // python
      Field{O::python, "version", string, always, "", "platform.python_version()", "versions"},
      Field{O::python, "executable", string, always, "", "sys.executable", "torch"},
      // space: either error, or size and free.
      Field{O::space, "path", string, always, "", "the path measured", "log dir, /dev/shm"},
      Field{O::space, "size", integer, sometimes, "bytes", "its file system's size, when read",
            "log dir, /dev/shm"},
      Field{O::space, "free", integer, sometimes, "bytes",
            "what is free to unprivileged users, when read", "log dir, /dev/shm"},
      Field{O::space, "error", string, sometimes, "", "why it could not be read, when not",
            "log dir, /dev/shm"},
      // limit
      Field{O::limit, "soft", integer | null, always, "count or bytes",
            "the soft limit; null for unlimited", "open files, memlock"},
      Field{O::limit, "hard", integer | null, always, "count or bytes",
            "the hard limit; null for unlimited", "open files"},
      // node: written by gangrun, passed through the workers.
      Field{O::node, "kind", string, always, "", "cpu, cuda, xpu or rocm", "devices"},
      Field{O::node, "devices", integer, always, "", "devices gangrun gives this node's workers",
            "devices, memlock"},
      Field{O::node, "driver", string, sometimes, "", "the driver's version, when probed",
            "devices"},
      // refused
      Field{O::refused, "rank", integer, always, "", "whose facts were refused", "seals"},
      Field{O::refused, "key", string, always, "", "the store key refused",
            "none (--json's facts)"},
      Field{O::refused, "why", string, always, "", "why the seal did not check", "seals"},
      // collectives
      Field{O::collectives, "backend", string, always, "", "gloo or nccl", "all-reduce"},
      Field{O::collectives, "init_s", number, always, "s", "init_process_group's time",
            "none (--json's facts)"},
      Field{O::collectives, "clock_offset_s", number, always, "s",
            "this rank's clock minus rank 0's", "clock"},
      Field{O::collectives, "bytes", integer, always, "bytes",
            "each all-reduce's size (GANGRUN_PREFLIGHT_BYTES)", "all-reduce"},
      Field{O::collectives, "gang", object, sometimes, "",
            "the gang's all-reduce, when there are 2 ranks or more", "all-reduce", O::gang},
      Field{O::collectives, "pairs", array, always, "", "the node pairs this rank measured",
            "node pairs", O::pair, object},
      // gang
      Field{O::gang, "seconds", number, always, "s", "the best of five", "all-reduce"},
      Field{O::gang, "bus_bytes_per_s", number, always, "bytes/s",
            "bus bandwidth, as nccl-tests counts it", "all-reduce"},
      // pair
      Field{O::pair, "ranks", array, always, "", "the pair's two ranks", "node pairs", O::none,
            integer},
      Field{O::pair, "seconds", number, always, "s", "the best of five", "none (--json's facts)"},
      Field{O::pair, "bus_bytes_per_s", number, always, "bytes/s",
            "bus bandwidth, as nccl-tests counts it", "node pairs"},
  };
}();

// The member KEY of object IN; a name that is not in k_fields does not compile.
consteval const Field& fact_named(Object in, std::string_view key) {
  for (const Field& field : k_fields) {
    if (field.in == in && field.key == key) return field;
  }
  throw "not a member of preflight::k_fields";
}

// The members the judge reads, by object: fact::rank::host is "host" in a rank's facts.
namespace fact {
#define GANGRUN_FACT(object, name) \
  inline constexpr const Field& name = fact_named(Object::object, #name)
namespace result {
GANGRUN_FACT(result, world_size);
GANGRUN_FACT(result, timeout_s);
GANGRUN_FACT(result, store);
GANGRUN_FACT(result, ranks);
GANGRUN_FACT(result, silent_ranks);
GANGRUN_FACT(result, sealed);
GANGRUN_FACT(result, refused);
GANGRUN_FACT(result, collectives);
GANGRUN_FACT(result, collectives_error);
GANGRUN_FACT(result, collectives_skipped);
GANGRUN_FACT(result, this_node);
}  // namespace result
namespace rank {
GANGRUN_FACT(rank, rank);
GANGRUN_FACT(rank, local_rank);
GANGRUN_FACT(rank, node_rank);
GANGRUN_FACT(rank, host);
GANGRUN_FACT(rank, masks);
GANGRUN_FACT(rank, torch);
GANGRUN_FACT(rank, python);
GANGRUN_FACT(rank, log_dir);
GANGRUN_FACT(rank, shm);
GANGRUN_FACT(rank, open_files);
GANGRUN_FACT(rank, memlock);
GANGRUN_FACT(rank, variables);
GANGRUN_FACT(rank, node);
}  // namespace rank
namespace torch {
GANGRUN_FACT(torch, error);
GANGRUN_FACT(torch, version);
GANGRUN_FACT(torch, cuda);
GANGRUN_FACT(torch, cuda_devices);
GANGRUN_FACT(torch, nccl);
GANGRUN_FACT(torch, cuda_error);
}  // namespace torch
namespace python {
GANGRUN_FACT(python, version);
GANGRUN_FACT(python, executable);
}  // namespace python
namespace space {
GANGRUN_FACT(space, path);
GANGRUN_FACT(space, size);
GANGRUN_FACT(space, free);
GANGRUN_FACT(space, error);
}  // namespace space
namespace limit {
GANGRUN_FACT(limit, soft);
GANGRUN_FACT(limit, hard);
}  // namespace limit
namespace node {
GANGRUN_FACT(node, kind);
GANGRUN_FACT(node, devices);
GANGRUN_FACT(node, driver);
}  // namespace node
namespace refused {
GANGRUN_FACT(refused, rank);
GANGRUN_FACT(refused, why);
}  // namespace refused
namespace collectives {
GANGRUN_FACT(collectives, backend);
GANGRUN_FACT(collectives, clock_offset_s);
GANGRUN_FACT(collectives, bytes);
GANGRUN_FACT(collectives, gang);
GANGRUN_FACT(collectives, pairs);
}  // namespace collectives
namespace gang {
GANGRUN_FACT(gang, seconds);
GANGRUN_FACT(gang, bus_bytes_per_s);
}  // namespace gang
namespace pair {
GANGRUN_FACT(pair, ranks);
GANGRUN_FACT(pair, bus_bytes_per_s);
}  // namespace pair
#undef GANGRUN_FACT
}  // namespace fact

// Who sets a variable the worker reads.
enum class SetBy {
  gangrun_preflight,  // gangrun preflight (commands/preflight_command.cpp), for this worker
  launch,             // the launch, as for any job's worker (torchrun's variables)
  nobody,             // no one: a knob for tests and benchmarks, with a default
};

struct Variable {
  std::string_view name;
  SetBy set_by;
  bool required;              // the worker fails without it
  std::string_view fallback;  // what the worker uses when it is unset ("" when required)
  std::string_view meaning;
};

// Every environment variable the worker reads as its input (preflight_worker.py's
// VARIABLES), in its order. The masks and the compared variables it records are
// facts, not inputs: see rank's masks and variables.
inline constexpr auto k_variables = std::array{
    Variable{"GANGRUN_PREFLIGHT_GANGRUN", SetBy::gangrun_preflight, true, "",
             "the gangrun binary the worker runs `gangrun store` with"},
    Variable{"GANGRUN_PREFLIGHT_RESULT", SetBy::gangrun_preflight, false,
             "the document is not written",
             "where each node's first worker writes the document for its gangrun to judge"},
    Variable{"GANGRUN_PREFLIGHT_TIMEOUT", SetBy::gangrun_preflight, false, "60",
             "seconds each wait may take (--preflight-timeout)"},
    Variable{"GANGRUN_PREFLIGHT_LOG_DIR", SetBy::gangrun_preflight, false, "the working directory",
             "the directory whose free space log_dir measures"},
    Variable{"GANGRUN_PREFLIGHT_NODE", SetBy::gangrun_preflight, false, "{}",
             "what gangrun saw of the node, as JSON: the facts' node"},
    Variable{"GANGRUN_PREFLIGHT_BACKEND", SetBy::gangrun_preflight, false, "gloo",
             "nccl when gangrun gives the workers CUDA devices, else gloo"},
    Variable{"GANGRUN_PREFLIGHT_KEY", SetBy::gangrun_preflight, false, "values are not sealed",
             "64 hex digits of the key that seals every value (sealing.hpp); only with a "
             "job secret"},
    Variable{"GANGRUN_PREFLIGHT_BYTES", SetBy::nobody, false, "4194304",
             "the size of each all-reduce, in bytes"},
    Variable{"RANK", SetBy::launch, true, "", "the worker's global rank"},
    Variable{"WORLD_SIZE", SetBy::launch, true, "", "ranks in the gang"},
    Variable{"LOCAL_RANK", SetBy::launch, true, "", "the worker's rank on its node"},
    Variable{"GROUP_RANK", SetBy::launch, false, "0", "the node's rank"},
    Variable{"MASTER_ADDR", SetBy::launch, true, "", "the job's store's host"},
    Variable{"MASTER_PORT", SetBy::launch, true, "", "the job's store's port"},
};

// The variable NAME; a name that is not in k_variables does not compile.
consteval const Variable& variable_named(std::string_view name) {
  for (const Variable& variable : k_variables) {
    if (variable.name == name) return variable;
  }
  throw "not a variable of preflight::k_variables";
}

// The variables gangrun preflight sets, by name.
namespace variables {
inline constexpr const Variable& gangrun = variable_named("GANGRUN_PREFLIGHT_GANGRUN");
inline constexpr const Variable& result = variable_named("GANGRUN_PREFLIGHT_RESULT");
inline constexpr const Variable& timeout = variable_named("GANGRUN_PREFLIGHT_TIMEOUT");
inline constexpr const Variable& log_dir = variable_named("GANGRUN_PREFLIGHT_LOG_DIR");
inline constexpr const Variable& node = variable_named("GANGRUN_PREFLIGHT_NODE");
inline constexpr const Variable& backend = variable_named("GANGRUN_PREFLIGHT_BACKEND");
inline constexpr const Variable& key = variable_named("GANGRUN_PREFLIGHT_KEY");
}  // namespace variables

}  // namespace gangrun::preflight
