// parse_command_line end to end: spellings, program passthrough, process
// counts, node options, and every usage error a user can hit on the command line.
#include "cli_docs/help_text.hpp"
#include "config/cli.hpp"
#include "config_test_support.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <vector>

namespace {

using gangrun::EnvMap;
using gangrun::Expected;
using gangrun::config::Accelerator;
using gangrun::config::Command;
using gangrun::config::MaskFormat;
using gangrun::config::Options;
using gangrun::config::ProcCount;
using gangrun::config::Source;
using gangrun::config::VisibleDevices;

using gangrun::config::test::launch;
using gangrun::config::test::parse;
using gangrun::config::test::usage_error;

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

}  // namespace

TEST_CASE("config::parse_command_line accepts snake_case and dash-case spellings", "[config]") {
  for (std::string spelling : {"--nproc_per_node", "--nproc-per-node"}) {
    Options o = launch({spelling, "4", "train.py"});
    REQUIRE(o.nproc_per_node);
    CHECK(o.nproc_per_node->number == 4);
    CHECK(o.origins.at("nproc_per_node").source == Source::command_line);
  }
  Options o = launch({"--node-rank=1", "--nnodes=2", "--master-addr", "10.0.0.1",
                      "--master_port=1234", "--max-restarts", "3", "--term_timeout", "5",
                      "--log-prefix", "[${rank}] ", "--dry_run", "train.py"});
  CHECK(o.node_rank == 1);
  CHECK(o.nnodes == 2);
  CHECK(o.master_addr == "10.0.0.1");
  CHECK(o.master_port == 1234);
  CHECK(o.max_restarts == 3);
  CHECK(o.term_timeout == 5.0);
  CHECK(o.log_prefix == "[${rank}] ");
  CHECK(o.dry_run);
}

TEST_CASE("config::parse_command_line accepts the accelerate and deepspeed aliases", "[config]") {
  Options o = launch({"--num_machines", "2", "--machine_rank", "1", "--main_process_ip", "h0",
                      "--main-process-port", "29501", "--num-processes", "8", "train.py"});
  CHECK(o.nnodes == 2);
  CHECK(o.node_rank == 1);
  CHECK(o.master_addr == "h0");
  CHECK(o.master_port == 29501);
  CHECK(o.num_processes == 8);
  CHECK(launch({"--num_nodes", "3", "x"}).nnodes == 3);
  CHECK(launch({"--num_accelerators", "2", "x"}).num_gpus == 2);
  CHECK(launch({"--num-gpus", "2", "x"}).num_gpus == 2);
  CHECK(launch({"-n", "6", "x"}).num_processes == 6);
  CHECK(launch({"-n6", "x"}).num_processes == 6);
}

TEST_CASE("config::parse_command_line keeps the program and its arguments untouched", "[config]") {
  Options o = launch({"--nproc_per_node", "2", "bash", "-c", "echo hi", "-x"});
  CHECK(o.program_and_args == std::vector<std::string>{"bash", "-c", "echo hi", "-x"});

  o = launch({"train.py", "--nproc_per_node", "8", "--", "-m", "--lr=3"});
  CHECK(o.program_and_args ==
        std::vector<std::string>{"train.py", "--nproc_per_node", "8", "--", "-m", "--lr=3"});
  CHECK_FALSE(o.nproc_per_node);

  o = launch({"--standalone", "--", "--weird-name", "-v"});
  CHECK(o.program_and_args == std::vector<std::string>{"--weird-name", "-v"});
  CHECK(o.standalone);
  CHECK(o.verbosity == 0);

  o = launch({"-m", "torch.utils.collect_env", "${local_rank}"});
  CHECK(o.module);
  CHECK(o.program_and_args == std::vector<std::string>{"torch.utils.collect_env", "${local_rank}"});
}

TEST_CASE("config::parse_command_line reads the process count spellings", "[config]") {
  CHECK(launch({"--nproc_per_node", "auto", "x"}).nproc_per_node->kind ==
        ProcCount::Kind::automatic);
  CHECK(launch({"--nproc_per_node", "gpu", "x"}).nproc_per_node->kind == ProcCount::Kind::gpu);
  CHECK(launch({"--nproc_per_node", "xpu", "x"}).nproc_per_node->kind == ProcCount::Kind::xpu);
  CHECK(launch({"--nproc_per_node=cpu", "x"}).nproc_per_node->kind == ProcCount::Kind::cpu);
  Options o = launch({"x"});
  CHECK_FALSE(o.nproc_per_node);
  CHECK_FALSE(o.num_processes);
  CHECK_FALSE(o.num_gpus);
}

TEST_CASE("config::parse_command_line rejects zero, negative and non-numeric process counts",
          "[config]") {
  CHECK_THAT(usage_error({"--nproc_per_node", "0", "x"}),
             StartsWith("--nproc_per_node: '0' is not a positive number"));
  CHECK_THAT(usage_error({"--nproc-per-node", "-1", "x"}),
             StartsWith("--nproc-per-node: '-1' is not a positive number"));
  CHECK(usage_error({"--nproc_per_node", "abc", "x"}) ==
        "--nproc_per_node: 'abc' is not a positive number (expected N, auto, gpu, xpu or cpu)");
  CHECK_THAT(usage_error({"--num_processes", "0", "x"}), StartsWith("--num_processes: '0'"));
  CHECK_THAT(usage_error({"-n", "-4", "x"}), StartsWith("-n: '-4' is not a positive integer"));
  CHECK_THAT(usage_error({"--num_gpus", "two", "x"}), StartsWith("--num_gpus: 'two'"));
  CHECK_THAT(usage_error({"--num_accelerators", "0", "x"}), StartsWith("--num_accelerators:"));
  CHECK_THAT(usage_error({"--num_gpus", "2.5", "x"}), StartsWith("--num_gpus: '2.5'"));
}

TEST_CASE("config::parse_command_line splits --num_processes over the nodes", "[config]") {
  Options o = launch({"--num_processes", "8", "--nnodes", "2", "--nproc_per_node", "4", "x"});
  CHECK(o.num_processes == 8);
  CHECK(o.nproc_per_node->number == 4);
  CHECK(launch({"--num_processes", "8", "--num_gpus", "4", "--num_machines", "2", "x"}).num_gpus ==
        4);
  std::string message = usage_error({"--num_processes", "7", "--nnodes", "2", "x"});
  CHECK_THAT(message, StartsWith("--num_processes: 7 processes in total cannot be split evenly "
                                 "over 2 nodes"));
  CHECK_THAT(message, Contains("--nnodes 2"));
  CHECK_THAT(usage_error({"-n", "1", "--nnodes", "2", "x"}),
             StartsWith("-n: 1 process in total cannot be split evenly over 2 nodes"));
}

TEST_CASE("config::parse_command_line rejects process counts that disagree", "[config]") {
  std::string message = usage_error({"--nproc_per_node", "4", "--num_processes", "8", "x"});
  CHECK_THAT(message, StartsWith("--nproc_per_node 4 and --num_processes 8 disagree"));
  CHECK_THAT(message, Contains("8 in total over 1 node"));
  CHECK_THAT(usage_error({"--num-gpus", "2", "--nproc-per-node", "3", "x"}),
             StartsWith("--nproc-per-node 3 and --num-gpus 2 disagree"));
  CHECK_THAT(usage_error({"-n", "4", "--num_accelerators", "2", "x"}),
             StartsWith("-n 4 and --num_accelerators 2 disagree"));
  // A count from the environment is set against the command line as well.
  CHECK_THAT(usage_error({"--num_gpus", "2", "x"}, {{"PET_NPROC_PER_NODE", "8"}}),
             StartsWith("PET_NPROC_PER_NODE=8 and --num_gpus 2 disagree"));
  // Device-probed counts cannot be checked yet and pass through to launch.
  Options o = launch({"--nproc_per_node", "gpu", "--num_gpus", "2", "x"});
  CHECK(o.nproc_per_node->kind == ProcCount::Kind::gpu);
  CHECK(o.num_gpus == 2);
}

TEST_CASE("config::parse_command_line checks --nnodes and --node_rank", "[config]") {
  CHECK(launch({"--nnodes", "2:2", "x"}).nnodes == 2);
  CHECK(launch({"x"}).nnodes == 1);
  CHECK(usage_error({"--nnodes", "3:2", "x"}) == "--nnodes: minimum 3 exceeds maximum 2 in '3:2'");
  std::string elastic = usage_error({"--num_machines", "1:4", "x"});
  CHECK_THAT(elastic, StartsWith("--num_machines: '1:4' is an elastic range"));
  CHECK_THAT(elastic, Contains("--rdzv_backend c10d"));
  CHECK_THAT(usage_error({"--nnodes", "0", "x"}), StartsWith("--nnodes: '0' is not a node count"));
  CHECK_THAT(usage_error({"--nnodes", "a:b", "x"}), StartsWith("--nnodes: 'a:b'"));
  CHECK_THAT(usage_error({"--node_rank", "2", "--nnodes", "2", "x"}),
             StartsWith("--node_rank: 2 is not a node rank for --nnodes 2 (expected 0..1)"));
  CHECK_THAT(usage_error({"--machine_rank", "1", "x"}),
             StartsWith("--machine_rank: 1 is not a node rank for --nnodes 1 (default)"));
  CHECK_THAT(usage_error({"--node_rank", "-1", "x"}), StartsWith("--node_rank: '-1'"));
  std::string standalone = usage_error({"--standalone", "--nnodes", "2", "x"});
  CHECK_THAT(standalone, StartsWith("--standalone runs on a single node"));
  CHECK_THAT(standalone, Contains("--nnodes 2"));
}

TEST_CASE("config::parse_command_line checks ports", "[config]") {
  CHECK(launch({"--master_port", "29500", "x"}).master_port == 29500);
  CHECK(launch({"--master_port", "65535", "x"}).master_port == 65535);
  Options free_port = launch({"--main_process_port", "0", "x"});
  CHECK_FALSE(free_port.master_port);
  CHECK(free_port.origins.at("master_port").text == "0");
  CHECK_THAT(usage_error({"--master_port", "65536", "x"}),
             StartsWith("--master_port: '65536' is not a port number (expected 1..65535"));
  CHECK_THAT(usage_error({"--master-port=abc", "x"}), StartsWith("--master-port: 'abc'"));
  CHECK_THAT(usage_error({"--master_port", "-1", "x"}), StartsWith("--master_port: '-1'"));
}

TEST_CASE("config::parse_command_line checks the other numbers", "[config]") {
  Options o = launch({"--monitor_interval", "5", "--term-timeout", "0", "x"});
  CHECK(o.monitor_interval == 5.0);
  CHECK(o.term_timeout == 0.0);
  CHECK_THAT(usage_error({"--max_restarts", "-1", "x"}), StartsWith("--max_restarts: '-1'"));
  CHECK_THAT(usage_error({"--term-timeout", "-2", "x"}), StartsWith("--term-timeout: '-2'"));
  CHECK_THAT(usage_error({"--term_timeout", "nan", "x"}), StartsWith("--term_timeout: 'nan'"));
  // A huge grace used to overflow into "kill at once".
  CHECK(usage_error({"--term-timeout", "1e16", "x"}) ==
        "--term-timeout: '1e16' is not a number of seconds from 0 to 86400 (one day)");
  CHECK_THAT(usage_error({"--monitor_interval", "1e308", "x"}),
             StartsWith("--monitor_interval: '1e308' is not a number of seconds from 0 to 86400"));
  CHECK_THAT(usage_error({"--max_restarts", "2147483647", "x"}),
             StartsWith("--max_restarts: '2147483647' is not a restart count from 0 to 1000000"));
  // -v counts saturate instead of wrapping around to a negative (quiet) level.
  CHECK(launch({"--verbose=2147483647", "-v", "x"}).verbosity == 2147483647);
  CHECK_THAT(usage_error({"--monitor-interval", "soon", "x"}),
             StartsWith("--monitor-interval: 'soon'"));
}

TEST_CASE("config::parse_command_line refuses -m with --no_python", "[config]") {
  CHECK(usage_error({"-m", "--no_python", "x"}) ==
        "-m/--module and --no_python cannot be combined");
  CHECK(usage_error({"--no-python", "--module", "x"}) ==
        "-m/--module and --no_python cannot be combined");
  CHECK_THAT(usage_error({"--no_python", "x"}, {{"GANGRUN_MODULE", "1"}}),
             Contains("GANGRUN_MODULE=1"));
  Options o = launch({"--no_python", "--python", "/usr/bin/python3", "./a.out"});
  CHECK(o.no_python);
  CHECK(o.python == "/usr/bin/python3");
}

TEST_CASE("config::parse_command_line names unknown options", "[config]") {
  CHECK_THAT(usage_error({"--bogus", "x"}), StartsWith("unknown option '--bogus'"));
  CHECK_THAT(usage_error({"--bogus=3", "x"}), StartsWith("unknown option '--bogus'"));
  CHECK_THAT(usage_error({"--nproc_per_node", "2", "-z", "x"}), StartsWith("unknown option '-z'"));
  CHECK_THAT(usage_error({"--nproc_per_nod", "2", "x"}),
             Contains("did you mean --nproc_per_node?"));
  CHECK_THAT(usage_error({"--bogus"}), StartsWith("unknown option '--bogus'"));
}

TEST_CASE("config::parse_command_line asks for a missing PROGRAM or value", "[config]") {
  std::string message = usage_error({"--nproc_per_node", "2"});
  CHECK_THAT(message, StartsWith("missing PROGRAM"));
  CHECK_THAT(message, Contains("gangrun --help"));
  CHECK_THAT(usage_error({}), StartsWith("missing PROGRAM"));
  CHECK_THAT(usage_error({"--"}), StartsWith("missing PROGRAM"));
}

TEST_CASE("config::parse_command_line reports an option without its value", "[config]") {
  CHECK_THAT(usage_error({"--nproc_per_node"}),
             StartsWith("--nproc_per_node: missing value (expected --nproc_per_node N|"));
  CHECK_THAT(usage_error({"--log-dir="}), StartsWith("--log-dir: missing value"));
  CHECK_THAT(usage_error({"-r"}), StartsWith("-r: missing value"));
}

TEST_CASE("config::parse_command_line takes the last of a repeated option", "[config]") {
  Options o = launch({"--nnodes", "2", "--num_nodes", "3", "--nnodes=4", "x"});
  CHECK(o.nnodes == 4);
  CHECK(o.origins.at("nnodes").text == "4");
}

TEST_CASE("config::parse_command_line reads -r and -t in both forms", "[config]") {
  using gangrun::config::Streams;
  Options o = launch({"-r", "3", "--tee=1", "x"});
  CHECK(o.redirects.all == Streams{true, true});
  CHECK(o.redirects.per_local_rank.empty());
  CHECK(o.tee.all == Streams{true, false});

  o = launch({"--redirects", "0:1,2:2", "-t2", "x"});
  CHECK(o.redirects.all == Streams{});
  CHECK(o.redirects.for_local_rank(0) == Streams{true, false});
  CHECK(o.redirects.for_local_rank(1) == Streams{});
  CHECK(o.redirects.for_local_rank(2) == Streams{false, true});
  CHECK(o.tee.all == Streams{false, true});

  CHECK(launch({"x"}).redirects == gangrun::config::StreamsByLocalRank{});
  CHECK_THAT(usage_error({"-r", "4", "x"}), StartsWith("-r: '4' is not a stream selection"));
  CHECK_THAT(usage_error({"--tee", "a:1", "x"}), StartsWith("--tee: 'a:1' in 'a:1'"));
  CHECK_THAT(usage_error({"-t", "0:1,0:2", "x"}), StartsWith("-t: local rank 0 appears twice"));
  CHECK_THAT(usage_error({"-t", "0:5", "x"}), StartsWith("-t: '0:5' is not a stream selection"));
}

TEST_CASE("config::parse_command_line reads --local_ranks_filter", "[config]") {
  Options o = launch({"--local_ranks_filter", "0,3", "x"});
  REQUIRE(o.local_ranks_filter);
  CHECK(*o.local_ranks_filter == std::set<int>{0, 3});
  CHECK_FALSE(launch({"x"}).local_ranks_filter);
  CHECK_THAT(usage_error({"--local-ranks-filter", "0,-1", "x"}),
             StartsWith("--local-ranks-filter: '-1' in '0,-1' is not a local rank"));
  CHECK_THAT(usage_error({"--local_ranks_filter", "0,,1", "x"}),
             StartsWith("--local_ranks_filter: '' in '0,,1'"));
}

TEST_CASE("config::parse_command_line reads --signals_to_handle", "[config]") {
  CHECK(launch({"x"}).signals_to_handle == std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT});
  CHECK(launch({"--signals_to_handle", "sigusr1, TERM,2,SIGTERM", "x"}).signals_to_handle ==
        std::vector<int>{SIGUSR1, SIGTERM, SIGINT});
  CHECK_THAT(usage_error({"--signals-to-handle", "SIGTERM,SIGKILL", "x"}),
             StartsWith("--signals-to-handle: 'SIGKILL' cannot be handled"));
  CHECK_THAT(usage_error({"--signals_to_handle", "stop", "x"}),
             StartsWith("--signals_to_handle: 'stop' cannot be handled"));
  CHECK_THAT(usage_error({"--signals_to_handle", "9", "x"}),
             StartsWith("--signals_to_handle: '9' cannot be handled"));
  CHECK_THAT(usage_error({"--signals_to_handle", "SIGFOO", "x"}),
             StartsWith("--signals_to_handle: 'SIGFOO' is not a signal name"));
  CHECK_THAT(usage_error({"--signals_to_handle", "999", "x"}),
             StartsWith("--signals_to_handle: '999' is not a signal name or number"));
}

TEST_CASE("config::parse_command_line reads output, color and verbosity", "[config]") {
  using gangrun::config::ColorMode;
  using gangrun::config::OutputMode;
  Options o = launch({"--output", "inherit", "--color=always", "-vv", "--verbose", "x"});
  CHECK(o.output == OutputMode::inherit);
  CHECK(o.color == ColorMode::always);
  CHECK(o.verbosity == 3);
  CHECK(o.origins.at("verbose").text == "3");
  CHECK(launch({"-q", "x"}).verbosity == -1);
  CHECK(launch({"-v", "-q", "x"}).verbosity == -1);
  CHECK(launch({"-v", "x"}, {{"GANGRUN_QUIET", "1"}}).verbosity == 1);
  CHECK(launch({"x"}, {{"GANGRUN_VERBOSE", "2"}}).verbosity == 2);
  CHECK(launch({"x"}).output == OutputMode::automatic);
  CHECK_THAT(usage_error({"--output", "tty", "x"}), StartsWith("--output: 'tty' is not an output"));
  CHECK_THAT(usage_error({"--color", "yes", "x"}), StartsWith("--color: 'yes' is not a color"));
}

TEST_CASE("config::parse_command_line lets NO_COLOR change only the default color", "[config]") {
  using gangrun::config::ColorMode;
  Options o = launch({"x"}, {{"NO_COLOR", "1"}});
  CHECK(o.color == ColorMode::never);
  CHECK(o.origins.at("color").source == Source::default_value);
  CHECK(launch({"x"}, {{"NO_COLOR", ""}}).color == ColorMode::automatic);
  CHECK(launch({"--color", "always", "x"}, {{"NO_COLOR", "1"}}).color == ColorMode::always);
  CHECK(launch({"x"}, {{"NO_COLOR", "1"}, {"GANGRUN_COLOR", "auto"}}).color ==
        ColorMode::automatic);
}

TEST_CASE("config::parse_command_line answers --help and --version", "[config]") {
  Expected<Command> help = parse({"--nproc_per_node", "2", "-h"});
  REQUIRE(help);
  CHECK(std::holds_alternative<gangrun::config::HelpRequest>(*help));
  CHECK_THAT(gangrun::cli_docs::help_text(std::get<gangrun::config::HelpRequest>(*help).topic),
             Contains("--nproc_per_node"));
  // Help wins over values that would be errors.
  REQUIRE(parse({"--nproc_per_node", "0", "--help"}));
  CHECK(std::holds_alternative<gangrun::config::HelpRequest>(*parse({"--help"})));

  Expected<Command> version = parse({"--version"});
  REQUIRE(version);
  CHECK(std::holds_alternative<gangrun::config::VersionRequest>(*version));
  CHECK_THAT(gangrun::cli_docs::version_text(), StartsWith("gangrun "));
  // After the program, --help belongs to the program.
  CHECK(launch({"train.py", "--help"}).program_and_args ==
        std::vector<std::string>{"train.py", "--help"});
}

TEST_CASE("config::parse_command_line records defaults as origins", "[config]") {
  Options o = launch({"x"});
  CHECK(o.origins.at("nnodes").text == "1");
  CHECK(o.origins.at("nnodes").source == Source::default_value);
  CHECK(o.origins.at("term_timeout").text == "30");
  CHECK(o.origins.at("rdzv_id").text == "none");
  CHECK(o.origins.at("standalone").text == "false");
  CHECK_FALSE(o.origins.contains("nproc_per_node"));
  CHECK_FALSE(o.origins.contains("master_addr"));
  CHECK_FALSE(o.origins.contains("help"));
  CHECK(o.rdzv_id == "none");
  CHECK(o.role == "default");
  CHECK(o.monitor_interval == 0.1);
  CHECK(o.term_timeout == 30.0);
}

TEST_CASE("config::parse_command_line reads the device options", "[config]") {
  Options o = launch({"--accelerator", "XPU", "--gpu-ids", "2,0", "--visible-devices", "per-rank",
                      "--devices-per-proc", "2", "--mask-format", "uuid", "p"});
  CHECK(o.accelerator == Accelerator::xpu);
  CHECK(o.gpu_ids == std::vector<int>{2, 0});
  CHECK(o.visible_devices == VisibleDevices::per_rank);
  CHECK(o.devices_per_proc == 2);
  CHECK(o.mask_format == MaskFormat::uuid);

  Options defaults = launch({"p"});
  CHECK(defaults.accelerator == Accelerator::automatic);
  CHECK_FALSE(defaults.gpu_ids);
  CHECK(defaults.visible_devices == VisibleDevices::shared);
  CHECK(defaults.mask_format == MaskFormat::index);
  CHECK_FALSE(launch({"--gpu_ids", "all", "p"}).gpu_ids);
  CHECK(launch({"--include", "localhost:0,2", "p"}).include == "localhost:0,2");
  CHECK(launch({"p"}, {{"GANGRUN_VISIBLE_DEVICES", "per_rank"}}).visible_devices ==
        VisibleDevices::per_rank);
}

TEST_CASE("config::parse_command_line refuses bad and contradictory device options", "[config]") {
  CHECK_THAT(usage_error({"--accelerator", "tpu", "p"}),
             Contains("--accelerator: 'tpu' is not an accelerator"));
  CHECK_THAT(usage_error({"--gpu_ids", "0,x", "p"}), Contains("'x' in '0,x' is not a device id"));
  CHECK_THAT(usage_error({"--gpu_ids", "", "p"}), Contains("--gpu_ids"));
  CHECK_THAT(usage_error({"--visible-devices", "each", "p"}),
             Contains("'each' is not a visibility mode"));
  CHECK_THAT(usage_error({"--mask-format", "name", "p"}), Contains("'name' is not a mask format"));
  CHECK_THAT(usage_error({"--devices-per-proc", "0", "p"}), Contains("--devices-per-proc"));
  CHECK_THAT(usage_error({"--include", "localhost:0", "--exclude", "localhost:1", "p"}),
             Contains("--include localhost:0 and --exclude localhost:1 cannot be combined"));
  CHECK_THAT(usage_error({"--gpu_ids", "0", "--include", "localhost:1", "p"}),
             Contains("both select devices"));
  // Selections are checked against each other here, before any device is
  // probed (placement/selection.cpp no longer does).
  CHECK_THAT(usage_error({"--num_gpus", "1", "--gpu_ids", "0", "p"}),
             Contains("--num_gpus 1 and --gpu_ids 0 both select devices"));
  CHECK_THAT(usage_error({"--num_gpus", "1", "--exclude", "localhost:1", "p"}),
             Contains("--num_gpus 1 and --exclude localhost:1 both select devices"));
  CHECK_THAT(usage_error({"--devices-per-proc", "2", "p"}),
             Contains("applies to --visible-devices per-rank only"));
}

TEST_CASE("config::parse_command_line: gangrun devices takes launch options and no program",
          "[config]") {
  Expected<Command> command = parse({"devices", "--json", "--nproc_per_node", "2"});
  REQUIRE(command);
  CHECK(std::holds_alternative<gangrun::config::DevicesRequest>(*command));
  CHECK(std::get<gangrun::config::DevicesRequest>(*command).options.json);
  CHECK(std::get<gangrun::config::DevicesRequest>(*command).options.nproc_per_node->number == 2);
  CHECK_THAT(usage_error({"devices", "train.py"}), Contains("gangrun -- devices"));
  Expected<Command> help = parse({"devices", "--help"});
  REQUIRE(help);
  CHECK(std::holds_alternative<gangrun::config::HelpRequest>(*help));
  CHECK_THAT(gangrun::cli_docs::help_text(std::get<gangrun::config::HelpRequest>(*help).topic),
             Contains("Usage: gangrun devices") && Contains("--visible-devices"));
  // A program called devices runs after --.
  CHECK(launch({"--", "devices"}).program_and_args == std::vector<std::string>{"devices"});
}

TEST_CASE("config::parse_command_line: gangrun report takes run directories and -o FILE",
          "[config]") {
  using gangrun::config::ReportRequest;
  Expected<Command> one = parse({"report", "logs/r_a"});
  REQUIRE(one);
  CHECK(std::get<ReportRequest>(*one).run_dirs == std::vector<std::string>{"logs/r_a"});
  CHECK_FALSE(std::get<ReportRequest>(*one).output);
  Expected<Command> two = parse({"report", "-o", "job.html", "logs/r_a", "--", "-b"});
  REQUIRE(two);
  CHECK(std::get<ReportRequest>(*two).run_dirs == std::vector<std::string>{"logs/r_a", "-b"});
  CHECK(std::get<ReportRequest>(*two).output == "job.html");
  Expected<Command> joined = parse({"report", "a", "b", "--output=x.html"});
  REQUIRE(joined);
  CHECK(std::get<ReportRequest>(*joined).output == "x.html");
  CHECK_THAT(usage_error({"report"}), Contains("report: give a run directory"));
  CHECK_THAT(usage_error({"report", "a", "--output"}), Contains("report: --output needs a file"));
  CHECK_THAT(usage_error({"report", "a", "--output="}), Contains("report: --output= needs a file"));
  CHECK_THAT(usage_error({"report", "a", "--json"}), Contains("report: unknown option '--json'"));
}

TEST_CASE("config::parse_command_line leaves the store's connection limit to the job's size",
          "[config]") {
  // A default written in the option table would be applied as if typed, and a job of thousands
  // of nodes would get 16384 (agent/agent_store.hpp: default_max_connections sizes it).
  CHECK_FALSE(launch({"--nnodes", "4096", "train.py"}).max_connections);
  CHECK(launch({"--max-connections", "5", "train.py"}).max_connections == 5u);
}
