// The gang doctor's stacks (lib/doctor/): py-spy's JSON read into threads,
// ranks grouped by where their main thread stands with stopped ranks and the
// odd ones out first, the stack tool found (and told not to pause a stopped
// rank), run through the same spawn path as every child (a stand-in script
// prints what py-spy would), and its failures explained with the fix.
#include "doctor/proc_stat.hpp"
#include "doctor/stack_groups.hpp"
#include "doctor/stack_tool.hpp"
#include "doctor/stacks.hpp"
#include "doctor/stacks_json.hpp"
#include "launch/program.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace gangrun::doctor;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gangrun::test::TempDir;

namespace {

// py-spy 0.4's `dump --json` for a process with a helper thread and a main
// thread in load_batch (fields it writes that gangrun does not read left out).
const char* const k_dump = R"([
  {"pid": 4711, "thread_id": 140, "thread_name": "Thread-1", "os_thread_id": 4713,
   "active": false, "owns_gil": false,
   "frames": [{"name": "<lambda>", "filename": "/job/train.py", "short_filename": "train.py",
               "line": 4, "locals": null}]},
  {"pid": 4711, "thread_id": 141, "thread_name": "MainThread", "os_thread_id": 4711,
   "active": true, "owns_gil": true,
   "frames": [{"name": "load_batch", "filename": "/job/train.py", "short_filename": "train.py",
               "line": 2},
              {"name": "train", "filename": "/job/train.py", "short_filename": "train.py",
               "line": 3},
              {"name": "<module>", "filename": "/job/train.py", "short_filename": "train.py",
               "line": 5}]}
])";

std::vector<Frame> frames(std::initializer_list<const char*> names) {
  std::vector<Frame> out;
  int line = 10;
  for (const char* name : names) out.push_back(Frame{name, "train.py", line++});
  return out;
}

RankStacks rank_at(int rank, const std::string& host, long pid, std::vector<Frame> main) {
  RankStacks stacks{rank, host, pid, {}, std::nullopt, std::nullopt};
  stacks.threads.push_back(ThreadStack{"MainThread", pid, false, std::move(main)});
  return stacks;
}

}  // namespace

TEST_CASE("py-spy's JSON is read into threads, innermost frame first", "[doctor]") {
  auto threads = parse_py_spy_json(k_dump);
  REQUIRE(threads);
  REQUIRE(threads->size() == 2);
  const ThreadStack* main = main_thread(*threads, 4711);
  REQUIRE(main != nullptr);
  CHECK(main->name == "MainThread");
  CHECK(main->active);
  REQUIRE(main->frames.size() == 3);
  CHECK(main->frames[0] == Frame{"load_batch", "train.py", 2});
  CHECK(frames_line(main->frames) == "load_batch <- train <- <module>");
  CHECK((*threads)[0].os_thread_id == 4713);

  SECTION("null fields take their defaults") {
    auto nulls = parse_py_spy_json(
        R"([{"thread_name": null, "os_thread_id": null, "frames": [{"name": "f", "line": null}]}])");
    REQUIRE(nulls);
    CHECK((*nulls)[0].name.empty());
    CHECK((*nulls)[0].frames[0] == Frame{"f", "", 0});
  }
  SECTION("what is not a list of threads is refused") {
    CHECK_FALSE(parse_py_spy_json("Error: Permission denied (os error 13)"));
    CHECK_FALSE(parse_py_spy_json(R"({"frames": []})"));
    CHECK_FALSE(parse_py_spy_json(R"([{"thread_name": "x"}])"));
  }
}

TEST_CASE("the main thread is the pid's, else MainThread, else the first", "[doctor]") {
  std::vector<ThreadStack> threads = {{"worker", 8, false, {}}, {"MainThread", 9, false, {}}};
  CHECK(main_thread(threads, 8)->name == "worker");
  CHECK(main_thread(threads, 1)->name == "MainThread");
  threads.pop_back();
  CHECK(main_thread(threads, 1)->name == "worker");
  CHECK(main_thread({}, 1) == nullptr);
}

TEST_CASE("ranks in the same place form a group; the odd ones out come first", "[doctor]") {
  std::vector<Frame> waiting = frames({"all_reduce", "train_step", "train"});
  std::vector<RankStacks> ranks = {
      rank_at(3, "node1", 303, waiting), rank_at(0, "node0", 100, waiting),
      rank_at(2, "node1", 302, frames({"load_batch", "train"})), rank_at(1, "node0", 101, waiting)};
  ranks.push_back(RankStacks{4, "node1", 304, {}, "pid 304 has ended", std::nullopt});

  std::vector<StackGroup> groups = group_by_stack(ranks);
  REQUIRE(groups.size() == 3);
  std::vector<std::string> lines = summary_lines(groups);
  CHECK(lines[0] == "rank 2 (node1, pid 302): load_batch <- train");
  CHECK(lines[1] == "ranks 0, 1, 3 (node0, node1): all_reduce <- train_step <- train");
  CHECK(lines[2] == "rank 4 (node1, pid 304): no stack: pid 304 has ended");

  SECTION("the full text follows the summary with every rank's threads") {
    std::string text = full_text(ranks, groups);
    CHECK_THAT(text, StartsWith(lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n"));
    CHECK_THAT(text, Contains("\nrank 2 (node1, pid 302)\n  thread 302 (MainThread, idle)\n"
                              "    load_batch (train.py:10)\n    train (train.py:11)\n"));
    CHECK(text.find("\nrank 0 ") < text.find("\nrank 1 "));
  }
  SECTION("the same function at another line is another place") {
    std::vector<RankStacks> two = {rank_at(0, "n", 1, frames({"step"})),
                                   rank_at(1, "n", 2, frames({"step"}))};
    two[1].threads[0].frames[0].line = 99;
    CHECK(group_by_stack(two).size() == 2);
  }
}

TEST_CASE("a stopped rank is named and comes first, before the ranks waiting for it", "[doctor]") {
  // Rank 1 stands where the others wait, stopped; rank 3 is stopped and
  // unreadable, rank 4 held by a debugger, rank 5 the running odd one out.
  std::vector<Frame> waiting = frames({"all_reduce", "train"});
  std::vector<RankStacks> ranks = {rank_at(0, "node0", 100, waiting),
                                   rank_at(1, "node0", 101, waiting),
                                   rank_at(2, "node0", 102, waiting),
                                   RankStacks{3, "node0", 103, {}, "the stack tool failed", 'T'},
                                   rank_at(4, "node0", 104, waiting),
                                   rank_at(5, "node0", 105, frames({"load_batch"}))};
  ranks[1].stopped = 'T';
  ranks[4].stopped = 't';

  const std::string by_signal = "stopped (SIGSTOP or another stop signal; state T)";
  const std::string by_tracer = "stopped by a debugger or another tracer (state t)";
  CHECK(stopped_words('T') == by_signal);
  CHECK(stopped_words('t') == by_tracer);
  std::vector<std::string> lines = summary_lines(group_by_stack(ranks));
  CHECK(lines == std::vector<std::string>{
                     "rank 1 (node0, pid 101): " + by_signal + ": all_reduce <- train",
                     "rank 4 (node0, pid 104): " + by_tracer + ": all_reduce <- train",
                     "rank 3 (node0, pid 103): " + by_signal + "; no stack: the stack tool failed",
                     "rank 5 (node0, pid 105): load_batch",
                     "ranks 0, 2 (node0): all_reduce <- train"});
  CHECK(stopped_ranks(ranks) == std::vector<int>{1, 3, 4});

  std::string text = full_text(ranks, group_by_stack(ranks));
  CHECK_THAT(text, Contains("\nrank 1 (node0, pid 101), " + by_signal +
                            "\n  thread 101 (MainThread, idle)\n    all_reduce"));
  CHECK_THAT(text, Contains("\nrank 3 (node0, pid 103), " + by_signal +
                            ": no stack: the stack tool failed\n"));

  SECTION("ranks stopped alike in the same place share a line") {
    ranks[0].stopped = 'T';
    // After rank 4's: the smaller of the stopped groups first.
    CHECK(summary_lines(group_by_stack(ranks)).at(1) ==
          "ranks 0, 1 (node0): " + by_signal + ": all_reduce <- train");
  }
  SECTION("the report names a stopped rank by its state and in words") {
    nlohmann::json json = stacks_json(ranks, lines, std::nullopt);
    CHECK(json["ranks"][1]["stopped"] == nlohmann::json{{"state", "T"}, {"text", by_signal}});
    CHECK(json["ranks"][4]["stopped"]["state"] == "t");
    CHECK(json["ranks"][0]["stopped"].is_null());
  }
}

TEST_CASE("a stopped rank is read without pausing it", "[doctor]") {
  // A fake /proc: 41 stopped by a signal, 42 held by a tracer, 43 asleep.
  TempDir proc;
  proc.write("41/stat", "41 (python) T 1 41 41 0 -1\n");
  proc.write("42/stat", "42 (py (t) x) t 1 42 42 0 -1\n");
  proc.write("43/stat", "43 (python) S 1 43 43 0 -1\n");
  const std::string root = proc.path().string();
  CHECK(stopped_state(41, root) == 'T');
  CHECK(stopped_state(42, root) == 't');
  CHECK_FALSE(stopped_state(43, root));
  CHECK_FALSE(stopped_state(44, root));  // gone

  RankStacks stopped = rank_to_read(1, "node0", 41, root);
  CHECK(stopped.rank == 1);
  CHECK(stopped.host == "node0");
  CHECK(stopped.pid == 41);
  CHECK(stopped.stopped == 'T');
  CHECK(dump_command_for("py-spy", stopped, false) ==
        std::vector<std::string>{"py-spy", "dump", "--json", "--pid", "41", "--nonblocking"});
  CHECK(dump_command_for("py-spy", rank_to_read(2, "node0", 42, root), true).back() ==
        "--nonblocking");
  RankStacks asleep = rank_to_read(3, "node0", 43, root);
  CHECK_FALSE(asleep.stopped);
  CHECK(dump_command_for("py-spy", asleep, false) == dump_command("py-spy", 43, false));
  CHECK(dump_command_for("py-spy", asleep, false, true).back() == "--nonblocking");
}

TEST_CASE("a long stack is cut after six frames", "[doctor]") {
  std::vector<Frame> deep = frames({"a", "b", "c", "d", "e", "f", "g", "h"});
  CHECK(frames_line(deep) == "a <- b <- c <- d <- e <- f <- ...");
  CHECK(frames_line(deep, 2) == "a <- b <- ...");
  CHECK(frames_line({}) == "(no Python frames)");
}

TEST_CASE("the stack tool's command and where it is found", "[doctor]") {
  CHECK(dump_command("/v/bin/py-spy", 42, false) ==
        std::vector<std::string>{"/v/bin/py-spy", "dump", "--json", "--pid", "42"});
  CHECK(dump_command("py-spy", 42, true).back() == "--native");

  TempDir dir;
  fs::path beside = dir.write("venv/bin/py-spy", "#!/bin/sh\n", true);
  fs::path on_path = dir.write("path/py-spy", "#!/bin/sh\n", true);
  gangrun::EnvMap env = {{"PATH", (dir.path() / "path").string()}};
  CHECK(find_stack_tool(std::nullopt, (dir.path() / "venv/bin").string(), env) == beside.string());
  CHECK(find_stack_tool(std::nullopt, (dir.path() / "nowhere").string(), env) == on_path.string());
  CHECK(find_stack_tool(on_path.string(), (dir.path() / "venv/bin").string(), env) ==
        on_path.string());
  CHECK_FALSE(find_stack_tool((dir.path() / "missing").string(), std::nullopt, env));
  CHECK_FALSE(find_stack_tool(std::nullopt, std::nullopt, {{"PATH", dir.path().string()}}));
  CHECK_THAT(missing_tool_hint(), Contains("pip install py-spy"));
}

TEST_CASE("py-spy is found beside a python that is the program itself, or in $VIRTUAL_ENV/bin",
          "[doctor][launch]") {
  // `gangrun /venv/bin/python s.py`: the program is the interpreter, and
  // its environment's bin/ holds py-spy; PATH does not.
  TempDir dir;
  fs::path python = dir.write("venv/bin/python", "#!/bin/sh\nexec sleep 1\n", true);
  fs::path tool = dir.write("venv/bin/py-spy", "#!/bin/sh\n", true);
  fs::path script = dir.write("s.py", "print(1)\n", false);
  gangrun::EnvMap env = {{"PATH", (dir.path() / "bin").string()}};
  // As the gang doctor asks: beside the plan's interpreter, if it has one.
  auto found_for = [&](const std::vector<std::string>& words, const gangrun::EnvMap& with) {
    gangrun::config::Options options;
    options.program_and_args = words;
    auto program = gangrun::launch::resolve_program(options, with);
    REQUIRE(program);
    std::optional<std::string> interpreter_dir;
    if (program->interpreter) {
      interpreter_dir = fs::path(program->interpreter->path).parent_path().string();
    }
    return find_stack_tool(std::nullopt, interpreter_dir, with);
  };
  CHECK(found_for({python.string(), script.string(), "--hang-timeout", "5"}, env) == tool.string());

  SECTION("named through PATH") {
    gangrun::EnvMap through_path = {{"PATH", (dir.path() / "venv/bin").string()}};
    gangrun::config::Options options;
    options.program_and_args = {"python", script.string()};
    auto program = gangrun::launch::resolve_program(options, through_path);
    REQUIRE(program);
    REQUIRE(program->interpreter);
    CHECK(program->interpreter->source == gangrun::report::InterpreterSource::program);
    CHECK(program->interpreter->origin ==
          "the program, python, found in " + (dir.path() / "venv/bin").string() + " on PATH");
  }
  SECTION("a link named otherwise that resolves to a python") {
    fs::create_directories(dir.path() / "tools");
    fs::create_symlink(python, dir.path() / "tools/py");
    fs::path beside_link = dir.write("tools/py-spy", "#!/bin/sh\n", true);
    CHECK(found_for({(dir.path() / "tools/py").string(), script.string()}, env) ==
          beside_link.string());
  }
  SECTION("a program that is no python has no interpreter") {
    fs::path other = dir.write("venv/bin/train", "#!/bin/sh\n", true);
    CHECK_FALSE(found_for({other.string()}, env));
  }
  SECTION("an activated environment's bin/") {
    fs::path system_python = dir.write("usr/bin/python3", "#!/bin/sh\n", true);
    gangrun::EnvMap activated = env;
    activated["VIRTUAL_ENV"] = (dir.path() / "venv").string();
    CHECK(found_for({system_python.string(), script.string()}, activated) == tool.string());
    CHECK_FALSE(found_for({system_python.string(), script.string()}, env));
  }
  CHECK_THAT(missing_tool_hint(), Contains("$VIRTUAL_ENV/bin"));
}

TEST_CASE("a failed capture says why and what to do", "[doctor]") {
  CHECK_THAT(explain_failure("Error: Permission denied (os error 13)\n", 0),
             Contains("CAP_SYS_PTRACE"));
  CHECK_THAT(explain_failure("Error: Permission denied (os error 13)\n", 1),
             Contains("kernel.yama.ptrace_scope is 1") && Contains("sudo"));
  CHECK_THAT(explain_failure("Error: Operation not permitted (os error 1)", 2),
             Contains("kernel.yama.ptrace_scope is 2"));
  CHECK(explain_failure("Error: Failed to find process 7", 0) == "it has ended");
  CHECK(explain_failure("Error: Failed to get process executable name. Check that the process is "
                        "running.",
                        std::nullopt) == "it has ended");
  CHECK_THAT(explain_failure("Error: Failed to find python version from target process", 0),
             Contains("not a Python process"));
  CHECK(explain_failure("", std::nullopt) == "the stack tool failed");
}

TEST_CASE("/proc says what a process is doing when no stack can be read", "[doctor]") {
  TempDir proc;
  proc.write("sys/kernel/yama/ptrace_scope", "2\n");
  proc.write("41/stat", "41 (python (x) y) S 1 41 41 0 -1\n");
  proc.write("41/wchan", "futex_wait_queue");
  proc.write("42/stat", "42 (python) R 1 42 42 0 -1\n");
  proc.write("43/stat", "43 (python) D 1 43 43 0 -1\n");
  proc.write("43/wchan", "0");
  proc.write("45/stat", "45 (python) T 1 45 45 0 -1\n");
  proc.write("45/wchan", "do_signal_stop");
  CHECK(read_ptrace_scope(proc.path().string()) == 2);
  CHECK(proc_state(45, proc.path().string()) == "stopped in do_signal_stop");
  CHECK(proc_state(41, proc.path().string()) == "sleeping in futex_wait_queue");
  CHECK(proc_state(42, proc.path().string()) == "running");
  CHECK(proc_state(43, proc.path().string()) == "in uninterruptible wait (D)");
  CHECK_FALSE(proc_state(44, proc.path().string()));
  CHECK_FALSE(read_ptrace_scope((proc.path() / "none").string()));
}

TEST_CASE("capture runs the tool as a child and reads what it printed", "[doctor]") {
  TempDir dir;
  fs::path dump = dir.write("dump.json", k_dump);
  // A stand-in for py-spy: checks its arguments, warns on stderr, prints the dump.
  fs::path tool = dir.write("py-spy",
                            "#!/bin/sh\n"
                            "[ \"$1 $2 $3 $4\" = 'dump --json --pid 4711' ] || exit 3\n"
                            "echo 'py-spy> warning: something' >&2\n"
                            "cat '" +
                                dump.string() + "'\n",
                            true);
  gangrun::EnvMap env = {{"PATH", "/usr/bin:/bin"}};
  auto threads =
      capture_stacks(dump_command(tool.string(), 4711, false), 4711, env, std::chrono::seconds(20));
  REQUIRE(threads);
  CHECK(threads->size() == 2);

  SECTION("its error becomes the reason") {
    fs::path denied = dir.write(
        "denied", "#!/bin/sh\necho 'Error: Permission denied (os error 13)' >&2\nexit 1\n", true);
    auto failed = capture_stacks(dump_command(denied.string(), 4711, false), 4711, env,
                                 std::chrono::seconds(20));
    REQUIRE_FALSE(failed);
    CHECK_THAT(failed.error().message(), Contains("not allowed to read it"));
  }
}
