// The contract between preflight_worker.py and the judge (preflight/facts_schema.hpp),
// held against the real worker: the script compiled into gangrun runs under
// /usr/bin/python3 as one rank of a gang of one, with the variables gangrun
// preflight sets, its `gangrun store` played by a script over files and torch
// hidden (so no torch is needed, and the test is the same where it is
// installed). Every key it writes must be in the schema with its type, every
// member the schema says is always there must be, and the judge must read the
// document into verdicts. A key renamed on either side fails here.
#include "preflight/checks.hpp"
#include "preflight/facts_schema.hpp"
#include "preflight/sealing.hpp"
#include "preflight/worker_script.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace gangrun::preflight;
using gangrun::test::TempDir;
using nlohmann::json;

namespace {

// Named, never found on PATH: the interpreter the integration tests use too.
constexpr const char* k_python = "/usr/bin/python3";

// `gangrun store ACTION --endpoint E --timeout T KEY`, as the worker calls it,
// over one file per key in the folder it is given.
constexpr const char* k_fake_store = R"py(#!/usr/bin/python3
import os
import sys

FOLDER = os.path.dirname(os.path.abspath(__file__)) + "/store"
if sys.argv[1] != "store" or len(sys.argv) != 8:
    sys.exit("fake gangrun: not a store call: %s" % sys.argv[1:])
action, key = sys.argv[2], sys.argv[7]
path = os.path.join(FOLDER, key.replace("/", "_"))
if action == "set":
    os.makedirs(FOLDER, exist_ok=True)
    with open(path, "wb") as stream:
        stream.write(sys.stdin.buffer.read())
elif action == "get":
    if not os.path.exists(path):
        sys.exit(1)
    with open(path, "rb") as stream:
        sys.stdout.buffer.write(stream.read())
elif action == "check":
    sys.exit(0 if os.path.exists(path) else 1)
else:
    sys.exit("fake gangrun: no store action " + action)
)py";

// A torch that imports and whose collectives do nothing but return: enough for
// the worker to run its collectives and write what they measured, without a
// second process, a network or torch itself.
constexpr const char* k_stand_in_torch = R"py(__version__ = "2.13.0+stand-in"
float32 = "float32"
float64 = "float64"


class version:
    cuda = None


class cuda:
    @staticmethod
    def is_available():
        return False


class Tensor:
    def __init__(self, values):
        self.values = values

    def item(self):
        return self.values[0]


def ones(count, dtype=None, device=None):
    return Tensor([1.0] * count)


def tensor(values, dtype=None, device=None):
    return Tensor(list(values))
)py";

// torch.distributed for the stand-in: a gang whose every member answers as this one.
constexpr const char* k_stand_in_distributed = R"py(
def is_gloo_available():
    return True


def is_nccl_available():
    return False


def init_process_group(backend, timeout=None):
    pass


def destroy_process_group():
    pass


def barrier(group=None):
    pass


def broadcast(tensor, src=0, group=None):
    pass


def all_reduce(tensor, group=None):
    pass


def new_group(ranks):
    return tuple(ranks)


def all_gather_object(gathered, answer, group=None):
    for index in range(len(gathered)):
        gathered[index] = answer
)py";

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs ARGV with exactly ENV (nothing inherited) and waits for it to end.
Ran run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        const TempDir& dir) {
  std::string output_path = dir / "output.txt";
  std::vector<std::string> env_text;
  for (const auto& [name, value] : env) env_text.push_back(name + "=" + value);
  std::vector<char*> argv_c;
  std::vector<char*> env_c;
  for (const std::string& arg : argv) argv_c.push_back(const_cast<char*>(arg.c_str()));
  for (const std::string& entry : env_text) env_c.push_back(const_cast<char*>(entry.c_str()));
  argv_c.push_back(nullptr);
  env_c.push_back(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int out = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || ::chdir(dir.path().c_str()) != 0) ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execve(argv_c[0], argv_c.data(), env_c.data());
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_text(output_path)};
}

bool is_of(const json& value, unsigned types) {
  switch (value.type()) {
    case json::value_t::null:
      return (types & json_type::null) != 0;
    case json::value_t::boolean:
      return (types & json_type::boolean) != 0;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return (types & (json_type::integer | json_type::number)) != 0;
    case json::value_t::number_float:
      return (types & json_type::number) != 0;
    case json::value_t::string:
      return (types & json_type::string) != 0;
    case json::value_t::array:
      return (types & json_type::array) != 0;
    case json::value_t::object:
      return (types & json_type::object) != 0;
    default:
      return false;
  }
}

// An object's name in docs/preflight.md's table: its name in facts_schema.hpp.
std::string object_name(Object object) {
  switch (object) {
    case Object::none:
      return "none";
    case Object::result:
      return "result";
    case Object::rank:
      return "rank";
    case Object::torch:
      return "torch";
    case Object::python:
      return "python";
    case Object::space:
      return "space";
    case Object::limit:
      return "limit";
    case Object::node:
      return "node";
    case Object::refused:
      return "refused";
    case Object::collectives:
      return "collectives";
    case Object::gang:
      return "gang";
    case Object::pair:
      return "pair";
  }
  return "?";
}

const Field* schema_field(Object in, const std::string& key) {
  auto found = std::find_if(k_fields.begin(), k_fields.end(),
                            [&](const Field& field) { return field.in == in && field.key == key; });
  return found == k_fields.end() ? nullptr : &*found;
}

// What in OBJECT (an object of kind IN, at WHERE) the schema does not allow;
// SEEN collects the schema's rows the document used.
void check_object(const json& object, Object in, const std::string& where,
                  std::vector<std::string>& problems, std::vector<const Field*>& seen);

void check_value(const json& value, const Field& field, const std::string& where,
                 std::vector<std::string>& problems, std::vector<const Field*>& seen) {
  if (!is_of(value, field.types)) {
    problems.push_back(where + " is " + value.type_name() + ", not of the schema's types");
    return;
  }
  if (value.is_object() && field.holds != Object::none) {
    check_object(value, field.holds, where, problems, seen);
  } else if (value.is_object() || value.is_array()) {
    // A map's values or an array's elements.
    for (const auto& [name, element] : value.items()) {
      std::string at = where + (value.is_array() ? "[" + name + "]" : "." + name);
      if (!is_of(element, field.elements)) {
        problems.push_back(at + " is " + element.type_name() + ", not of the schema's types");
      } else if (element.is_object() && field.holds != Object::none) {
        check_object(element, field.holds, at, problems, seen);
      }
    }
  }
}

void check_object(const json& object, Object in, const std::string& where,
                  std::vector<std::string>& problems, std::vector<const Field*>& seen) {
  for (const auto& [key, value] : object.items()) {
    const Field* field = schema_field(in, key);
    if (field == nullptr) {
      problems.push_back(where + "." + key + " is not in the schema");
      continue;
    }
    seen.push_back(field);
    check_value(value, *field, where + "." + key, problems, seen);
  }
  bool first_worker = in == Object::rank && object.value("local_rank", -1) == 0;
  for (const Field& field : k_fields) {
    bool expected = field.presence == Presence::always ||
                    (field.presence == Presence::first_worker && first_worker);
    if (field.in == in && expected && !object.contains(field.key)) {
      problems.push_back(where + "." + std::string(field.key) + " is missing");
    }
  }
}

std::vector<std::string> schema_problems(const json& document, std::vector<const Field*>& seen) {
  std::vector<std::string> problems;
  if (!document.is_object()) return {"the document is not a JSON object"};
  check_object(document, Object::result, "facts", problems, seen);
  return problems;
}

// The worker's VARIABLES dict, read from its text by Python's parser: "NAME required"
// or "NAME optional", one a line, in the dict's order.
constexpr const char* k_read_variables = R"py(
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["VARIABLES"]:
        for key, value in zip(node.value.keys, node.value.values):
            required = isinstance(value, ast.Name) and value.id == "REQUIRED"
            print(key.value, "required" if required else "optional")
)py";

// One rank of a preflight, run by the real worker in a folder of its own.
struct Worker {
  TempDir dir;
  std::string script;
  std::string result;
  std::map<std::string, std::string> env;  // exactly the worker's environment

  Worker() {
    REQUIRE(::access(k_python, X_OK) == 0);
    script = dir.write("preflight_worker.py", std::string(worker_script()));
    result = dir / "answer.json";
    std::string gangrun = dir.write("gangrun", k_fake_store, true);
    // A torch package that fails to import, first on the path: a node without torch.
    dir.write("no_torch/torch/__init__.py",
              "raise ImportError('torch is hidden by test_preflight_schema')\n");
    dir.write("stand_in/torch/__init__.py", k_stand_in_torch);
    dir.write("stand_in/torch/distributed.py", k_stand_in_distributed);
    json node = {{fact::node::kind.key, "cuda"},
                 {fact::node::devices.key, 1},
                 {fact::node::driver.key, "550.54.15"}};
    // The variables gangrun preflight sets (commands/preflight_command.cpp)...
    env[std::string(variables::gangrun.name)] = gangrun;
    env[std::string(variables::result.name)] = result;
    env[std::string(variables::timeout.name)] = "30";
    env[std::string(variables::log_dir.name)] = dir.path().string();
    env[std::string(variables::node.name)] = node.dump();
    env[std::string(variables::backend.name)] = "gloo";
    env[std::string(variables::key.name)] = preflight_key("a job secret", "schema-test");
    // ...those the launch sets for any worker...
    env["RANK"] = "0";
    env["WORLD_SIZE"] = "1";
    env["LOCAL_RANK"] = "0";
    env["GROUP_RANK"] = "0";
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = "1";  // never dialled: the fake store is files
    // ...and some it records: a mask, a compared variable.
    env["CUDA_VISIBLE_DEVICES"] = "0";
    env["NCCL_DEBUG"] = "WARN";
    env["PYTHONPATH"] = dir / "no_torch";
    env["PYTHONDONTWRITEBYTECODE"] = "1";
    env["PATH"] = "/usr/bin:/bin";
  }

  using Env = std::map<std::string, std::string>;

  Ran run_rank() const { return run({k_python, "-B", script}, env, dir); }
};

// What one preflight's head wrote, and what the schema made of it.
struct Written {
  json document;
  std::vector<std::string> problems;
  std::vector<const Field*> seen;
};

Written written_by(const Worker& head) {
  Ran ran = head.run_rank();
  INFO("the worker said: " << ran.output);
  REQUIRE(ran.exit_code == 0);
  Written written;
  written.document = json::parse(read_text(head.result), nullptr, false);
  REQUIRE_FALSE(written.document.is_discarded());
  written.problems = schema_problems(written.document, written.seen);
  return written;
}

// A node without torch, in a job with a secret: a gang of one rank, whose
// collectives are skipped.
Written without_torch() { return written_by(Worker()); }

// Two nodes of one rank each whose interpreter imports the stand-in torch, in
// a job without a secret: rank 1's worker writes its facts and ends for want
// of rank 0's plan (it runs first, alone); rank 0's then finds them, runs the
// collectives and writes the document.
Written with_stand_in_torch() {
  Worker worker;
  worker.env.erase(std::string(variables::key.name));
  worker.env["PYTHONPATH"] = worker.dir / "stand_in";
  worker.env["WORLD_SIZE"] = "2";
  worker.env["GANGRUN_PREFLIGHT_BYTES"] = "4096";
  worker.env[std::string(variables::node.name)] =
      json{{fact::node::kind.key, "cpu"}, {fact::node::devices.key, 0}}.dump();
  Worker::Env rank_0 = worker.env;
  worker.env["RANK"] = "1";
  worker.env["GROUP_RANK"] = "1";
  Ran follower = worker.run_rank();
  INFO("rank 1 said: " << follower.output);
  REQUIRE(follower.exit_code == 1);
  REQUIRE_THAT(follower.output, Catch::Matchers::Contains("rank 0 published no plan"));
  worker.env = rank_0;
  return written_by(worker);
}

std::string lines(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& text : texts) out += text + "\n";
  return out;
}

const Check& row(const std::vector<Check>& checks, const std::string& name) {
  auto found = std::find_if(checks.begin(), checks.end(),
                            [&](const Check& check) { return check.name == name; });
  REQUIRE(found != checks.end());
  return *found;
}

// What a run wrote, held against the schema first, then judged as gangrun judges it.
std::vector<Check> judged_against_schema(const Written& written) {
  INFO("it wrote: " << written.document.dump(2));
  INFO("against the schema:\n" << lines(written.problems));
  CHECK(written.problems.empty());
  std::vector<Check> checks;
  REQUIRE_NOTHROW(checks = judge(written.document));
  return checks;
}

}  // namespace

TEST_CASE("preflight schema: the worker's variables are the schema's", "[preflight]") {
  Worker worker;
  std::string reader = worker.dir.write("read_variables.py", k_read_variables);
  Ran read = run({k_python, reader, worker.script}, {}, worker.dir);
  INFO(read.output);
  REQUIRE(read.exit_code == 0);
  std::string expected;
  for (const Variable& variable : k_variables) {
    expected += std::string(variable.name) + (variable.required ? " required\n" : " optional\n");
  }
  CHECK(read.output == expected);
}

TEST_CASE("preflight schema: a node without torch writes the schema's facts, and they are judged",
          "[preflight]") {
  Written written = without_torch();
  std::vector<Check> checks = judged_against_schema(written);
  CHECK(row(checks, "store").verdict == Verdict::pass);
  CHECK(row(checks, "seals").verdict == Verdict::pass);
  CHECK(row(checks, "torch").verdict == Verdict::fail);  // hidden on purpose
  CHECK_THAT(row(checks, "torch").detail,
             Catch::Matchers::Contains("torch is hidden by test_preflight_schema"));
  CHECK_THAT(row(checks, "torch").detail, Catch::Matchers::Contains(k_python));
  CHECK(row(checks, "all-reduce").verdict == Verdict::skipped);
}

TEST_CASE("preflight schema: two nodes' collectives write the schema's facts, and they are judged",
          "[preflight]") {
  Written written = with_stand_in_torch();
  std::vector<Check> checks = judged_against_schema(written);
  CHECK(row(checks, "store").verdict == Verdict::pass);
  CHECK(row(checks, "torch").detail == "imports torch 2.13.0+stand-in");
  CHECK(row(checks, "versions").verdict == Verdict::pass);
  CHECK(row(checks, "variables").verdict == Verdict::pass);
  CHECK(row(checks, "clock").verdict == Verdict::pass);
  CHECK_THAT(row(checks, "all-reduce").detail, Catch::Matchers::StartsWith("gloo of 4.0 KiB"));
  CHECK_THAT(row(checks, "node pairs").detail, Catch::Matchers::StartsWith("bus bandwidth 0-1"));
}

TEST_CASE("preflight schema: every row of the schema is written by the worker", "[preflight]") {
  // What only hardware or a failure writes: CUDA devices, a file system that
  // cannot be read, collectives that fail, facts whose seal does not check.
  const std::vector<const Field*> not_written_here = {schema_field(Object::torch, "device_names"),
                                                      &fact::torch::nccl,
                                                      &fact::torch::cuda_error,
                                                      &fact::space::error,
                                                      &fact::result::collectives_error,
                                                      &fact::refused::rank,
                                                      schema_field(Object::refused, "key"),
                                                      &fact::refused::why};
  std::vector<const Field*> seen = without_torch().seen;
  std::vector<const Field*> more = with_stand_in_torch().seen;
  seen.insert(seen.end(), more.begin(), more.end());
  for (const Field& field : k_fields) {
    bool written = std::find(seen.begin(), seen.end(), &field) != seen.end();
    bool expected = std::find(not_written_here.begin(), not_written_here.end(), &field) ==
                    not_written_here.end();
    INFO("the schema's " << object_name(field.in) << " " << field.key);
    CHECK(written == expected);
  }
}

TEST_CASE("preflight schema: docs/preflight.md has a row for every fact and variable",
          "[preflight]") {
  std::string doc = read_text(GANGRUN_PREFLIGHT_DOC);
  std::size_t section = doc.find("## The facts: what the workers write, what gangrun reads");
  REQUIRE(section != std::string::npos);
  doc = doc.substr(section, doc.find("\n## ", section + 1) - section);
  for (const Variable& variable : k_variables) {
    std::string row = "| `" + std::string(variable.name) + "` |";
    INFO("the row that starts " << row);
    CHECK(doc.find(row) != std::string::npos);
  }
  for (const Field& field : k_fields) {
    std::string row = "| " + object_name(field.in) + " | `" + std::string(field.key) + "` |";
    INFO("the row that starts " << row);
    CHECK(doc.find(row) != std::string::npos);
  }
}
