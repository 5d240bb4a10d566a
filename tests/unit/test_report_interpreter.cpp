#include "report/failure_summary.hpp"
#include "report/interpreter.hpp"
#include "report/run_report.hpp"

#include <catch2/catch.hpp>

using namespace gangrun::report;

namespace {

const std::vector<std::string> k_torch_missing = {
    "Traceback (most recent call last):",
    "  File \"/work/train.py\", line 1, in <module>",
    "    import torch",
    "ModuleNotFoundError: No module named 'torch'",
};

Interpreter venv_python() {
  Interpreter interpreter;
  interpreter.path = "/opt/venv/bin/python";
  interpreter.source = InterpreterSource::path_search;
  interpreter.origin = "the default, python3, found in /opt/venv/bin on PATH";
  return interpreter;
}

RunRecord run_whose_root_printed(std::vector<std::string> lines) {
  RunRecord run;
  run.host = "node1";
  run.entrypoint = "train.py";
  run.interpreter = venv_python();
  WorkerRecord root;
  root.pid = 10;
  root.exit_code = 1;
  root.shell_code = 1;
  root.last_lines = std::move(lines);
  AttemptRecord attempt;
  attempt.workers = {root};
  attempt.root_cause = 0;
  run.attempts = {attempt};
  run.exit_code = 1;
  return run;
}

}  // namespace

TEST_CASE("report::missing_launcher_module finds torch, accelerate and deepspeed", "[report]") {
  CHECK(missing_launcher_module(k_torch_missing, std::nullopt) == "torch");
  CHECK(missing_launcher_module({"[rank0]: ModuleNotFoundError: No module named 'accelerate'"},
                                std::nullopt) == "accelerate");
  CHECK(missing_launcher_module({"ModuleNotFoundError: No module named 'deepspeed'", "bye"},
                                std::nullopt) == "deepspeed");
  CHECK(missing_launcher_module({"ModuleNotFoundError: No module named 'torch.distributed.run'"},
                                std::nullopt) == "torch.distributed.run");
}

TEST_CASE("report::missing_launcher_module ignores other modules and other errors", "[report]") {
  CHECK_FALSE(
      missing_launcher_module({"ModuleNotFoundError: No module named 'mymodel'"}, std::nullopt));
  CHECK_FALSE(missing_launcher_module({"ModuleNotFoundError: No module named 'torchvision'"},
                                      std::nullopt));
  CHECK_FALSE(missing_launcher_module({"ValueError: no module named 'torch' here"}, std::nullopt));
  CHECK_FALSE(missing_launcher_module({"ModuleNotFoundError: No module named '"}, std::nullopt));
  CHECK_FALSE(missing_launcher_module({}, std::nullopt));
  // The last failure counts: torch was found in the end, a user's module was not.
  CHECK_FALSE(missing_launcher_module(
      {"ModuleNotFoundError: No module named 'torch'", "retrying with the fallback",
       "ModuleNotFoundError: No module named 'fallback'"},
      std::nullopt));
}

TEST_CASE("report::missing_launcher_module reads the error file's message first", "[report]") {
  WorkerError error;
  error.message = "ModuleNotFoundError: No module named 'deepspeed'";
  CHECK(missing_launcher_module({"unrelated"}, error) == "deepspeed");
  error.message = "ValueError: bad batch";
  CHECK(missing_launcher_module(k_torch_missing, error) == "torch");
}

TEST_CASE("report::interpreter_hint names the interpreter, its origin and the fix", "[report]") {
  std::string hint = interpreter_hint(venv_python(), "torch");
  CHECK(hint ==
        "torch is not installed for the Python interpreter that ran, /opt/venv/bin/python "
        "(chosen by the default, python3, found in /opt/venv/bin on PATH): install it into that "
        "interpreter (/opt/venv/bin/python -m pip install torch), or choose an interpreter that "
        "has it with --python PATH or PYTHON_EXEC");

  std::string submodule = interpreter_hint(venv_python(), "torch.distributed.run");
  CHECK_THAT(submodule, Catch::StartsWith("torch.distributed.run is missing from the torch of "
                                          "the Python interpreter that ran, /opt/venv/bin/python"));
  CHECK_THAT(submodule, Catch::Contains("/opt/venv/bin/python -m pip install -U torch"));

  Interpreter shebang = venv_python();
  shebang.source = InterpreterSource::shebang;
  CHECK_THAT(interpreter_hint(shebang, "accelerate"),
             Catch::Contains("pip install accelerate), or change that #! line"));
}

TEST_CASE("report::source_name gives each interpreter source its short name", "[report]") {
  CHECK(source_name(InterpreterSource::python_option) == "--python");
  CHECK(source_name(InterpreterSource::python_exec) == "PYTHON_EXEC");
  CHECK(source_name(InterpreterSource::path_search) == "PATH");
  CHECK(source_name(InterpreterSource::shebang) == "#!");
}

TEST_CASE("report::format_failure shows the interpreter and the hint", "[report]") {
  RunRecord run = run_whose_root_printed(k_torch_missing);
  std::string text = format_failure(run, run.attempts[0], std::nullopt);
  CHECK_THAT(text, Catch::Contains("  python:     /opt/venv/bin/python (chosen by the default, "
                                   "python3, found in /opt/venv/bin on PATH)\n"));
  CHECK_THAT(text, Catch::Contains("  hint:       torch is not installed for the Python "
                                   "interpreter that ran, /opt/venv/bin/python"));
  CHECK(text.find("last output:") < text.find("hint:"));
  CHECK(text.find("hint:") < text.find("Other workers:"));
}

TEST_CASE("report::format_failure gives no hint for other failures or unknown interpreters",
          "[report]") {
  RunRecord other_failure = run_whose_root_printed({"ValueError: bad batch"});
  std::string text = format_failure(other_failure, other_failure.attempts[0], std::nullopt);
  CHECK_THAT(text, Catch::Contains("  python:     /opt/venv/bin/python"));
  CHECK_THAT(text, !Catch::Contains("hint:"));

  RunRecord no_python = run_whose_root_printed(k_torch_missing);
  no_python.interpreter.reset();
  text = format_failure(no_python, no_python.attempts[0], std::nullopt);
  CHECK_THAT(text, !Catch::Contains("python:"));
  CHECK_THAT(text, !Catch::Contains("hint:"));
}

TEST_CASE("report::to_json carries the interpreter and the hint", "[report]") {
  RunRecord run = run_whose_root_printed(k_torch_missing);
  nlohmann::json json = to_json(run);
  CHECK(json["interpreter"]["path"] == "/opt/venv/bin/python");
  CHECK(json["interpreter"]["source"] == "PATH");
  CHECK(json["interpreter"]["origin"] == "the default, python3, found in /opt/venv/bin on PATH");
  CHECK(json["root_cause"]["hint"] == interpreter_hint(venv_python(), "torch"));
  CHECK(json["attempts"][0]["workers"][0]["hint"] == json["root_cause"]["hint"]);

  RunRecord other_failure = run_whose_root_printed({"ValueError: bad batch"});
  other_failure.interpreter.reset();
  json = to_json(other_failure);
  CHECK(json["interpreter"].is_null());
  CHECK(json["root_cause"]["hint"].is_null());
}

TEST_CASE("report::launcher_packages_imported reads import lines, each package once", "[report]") {
  CHECK(launcher_packages_imported("import os\nimport torch\nfrom torch.nn import Linear\n"
                                   "  from accelerate import Accelerator  # indented\n"
                                   "import deepspeed, sys\n") ==
        std::vector<std::string>{"torch", "accelerate", "deepspeed"});
  CHECK(launcher_packages_imported("import torchvision\nimport numpy as np\n# import torch\n"
                                   "x = 'import torch'\n")
            .empty());
  CHECK(launcher_packages_imported("").empty());
}
