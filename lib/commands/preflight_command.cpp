#include "commands/preflight_command.hpp"

#include "agent/node_agent.hpp"
#include "commands/launch_command.hpp"
#include "launch/job_secret.hpp"
#include "launch/node_devices.hpp"
#include "launch/plan.hpp"
#include "launch/plan_checks.hpp"
#include "launch/run_directory.hpp"
#include "logging/logging.hpp"
#include "preflight/checks.hpp"
#include "preflight/facts_schema.hpp"
#include "preflight/json_fields.hpp"
#include "preflight/report_text.hpp"
#include "preflight/sealing.hpp"
#include "preflight/worker_script.hpp"
#include "remote/remote_start.hpp"
#include "remote/tool_start.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"
#include "util/temp_dir.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace gangrun::commands {
namespace {

namespace fs = std::filesystem;

constexpr double k_default_join_timeout = config::RendezvousConf{}.join_timeout;

Expected<void> write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return fail(ErrorCode::usage, "cannot write " + path);
  return {};
}

// What this node's gangrun knows of its devices, for the facts: the kind,
// how many the launch uses, and the driver that reported them.
nlohmann::json node_json(const launch::LaunchPlan& plan, const launch::NodeProbes& probes) {
  nlohmann::json node = {{"kind", "cpu"}, {"devices", 0}};
  if (!plan.devices) return node;
  node["kind"] = accel::to_string(plan.devices->kind);
  node["devices"] = plan.devices->selected.size();
  const std::optional<accel::BackendReport>* report = nullptr;
  switch (plan.devices->kind) {
    case accel::DeviceKind::cuda:
      report = &probes.cuda;
      break;
    case accel::DeviceKind::xpu:
      report = &probes.xpu;
      break;
    case accel::DeviceKind::rocm:
      report = &probes.rocm;
      break;
    default:
      break;
  }
  if (report != nullptr && *report && !(*report)->driver_version.empty()) {
    node["driver"] = (*report)->driver_version;
  }
  return node;
}

// The launch's options, turned into preflight's job.
config::Options preflight_options(config::Options options, const std::string& worker_path) {
  options.program_and_args = {worker_path};
  options.module = false;
  options.no_python = false;
  options.preflight = false;
  options.dry_run = false;
  // A node that never comes is named after the preflight's own timeout.
  if (options.rdzv_conf.join_timeout == k_default_join_timeout) {
    options.rdzv_conf.join_timeout = options.preflight_timeout;
  }
  // A worker stuck where no timeout of its own reaches (an import on a hung
  // file system) is stopped, so the preflight always ends by itself.
  if (!options.hang_timeout) options.hang_timeout = 3 * options.preflight_timeout + 10;
  return options;
}

// The options of a preflight of this node alone, with a store of its own on
// loopback: a node of a job of many checks itself before it joins, and never
// meets the job's other nodes in a preflight's rendezvous.
config::Options this_node_only(config::Options options) {
  options.nnodes = 1;
  options.min_nnodes = 1;
  options.node_rank = 0;
  options.rdzv_backend = config::RendezvousBackend::static_ranks;
  options.rdzv_endpoint.reset();
  options.master_addr = "127.0.0.1";
  options.master_port.reset();
  options.local_addr.reset();
  options.launcher = config::Options::Launcher::local;
  return options;
}

// Reads the head's answer this node's first worker copied; the checks, or
// nullopt when none came (the job's own messages said why).
std::optional<nlohmann::json> read_answer(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json answer = nlohmann::json::parse(text.str(), nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) return std::nullopt;
  return answer;
}

bool printed_here(const nlohmann::json& answer) {
  const nlohmann::json& ranks = preflight::field(answer, "ranks");
  if (!ranks.is_array() || ranks.empty() || ranks[0].is_null()) return true;
  return preflight::value_of(answer, "this_node", 0) ==
         preflight::value_of(ranks[0], "node_rank", 0);
}

// Runs the checks on this node (and, through the rendezvous, on every node
// of the job); prints them where the head's rank ran.
Expected<int> run_checks(const config::Options& launch_options, const EnvMap& env) {
  // A private temporary directory for the worker's program and its answer,
  // removed however the preflight ends (but a SIGKILL).
  GANGRUN_TRY_ASSIGN(made, launch::RunDirectory::create(std::nullopt, temp_dir(env), "preflight"));
  std::optional<launch::RunDirectory> scratch(std::move(*made));
  std::string worker_path = scratch->path() + "/preflight_worker.py";
  std::string answer_path = scratch->path() + "/answer.json";
  GANGRUN_TRY(write_file(worker_path, preflight::worker_script()));
  config::Options options = preflight_options(launch_options, worker_path);

  std::optional<launch::NodeDevices> devices;
  launch::NodeProbes probes;
  if (launch::launch_needs_devices(options)) {
    probes = launch::probe_node(options, env, launch::ProbeScope::needed);
    GANGRUN_TRY_ASSIGN(found, launch::node_devices(options, env, probes));
    devices = std::move(*found);
  }
  GANGRUN_TRY_ASSIGN(plan, launch::make_plan(options, env, std::move(devices)));
  GANGRUN_TRY(launch::check_output_paths(*plan));
  GANGRUN_TRY(launch::check_store_host_resolves(*plan));
  bool nccl = plan->devices && plan->devices->kind == accel::DeviceKind::cuda &&
              !plan->devices->selected.empty();
  std::string self = remote::path_of_self();
  plan->host_env[std::string(preflight::variables::gangrun.name)] = self.empty() ? "gangrun" : self;
  plan->host_env[std::string(preflight::variables::result.name)] = answer_path;
  plan->host_env[std::string(preflight::variables::timeout.name)] =
      std::to_string(options.preflight_timeout);
  plan->host_env[std::string(preflight::variables::log_dir.name)] =
      plan->log_dir.value_or(fs::current_path().string());
  plan->host_env[std::string(preflight::variables::node.name)] = node_json(*plan, probes).dump();
  plan->host_env[std::string(preflight::variables::backend.name)] = nccl ? "nccl" : "gloo";
  // The workers seal what they exchange with a key derived from the job's
  // secret, never the secret itself (preflight/sealing.hpp). Also on one
  // node: its store's port is open to the host's other users.
  GANGRUN_TRY_ASSIGN(secret, launch::read_job_secret(env));
  if (*secret) {
    plan->host_env[std::string(preflight::k_preflight_key_variable)] =
        preflight::preflight_key((*secret)->value, plan->run_id);
  }

  agent::RunResult ran = agent::run(*plan);
  if (ran.die_by_signal) {
    scratch.reset();
    die_by_signal(*ran.die_by_signal);
  }
  std::optional<nlohmann::json> answer = read_answer(answer_path);
  if (!answer) {
    spdlog::error(
        "preflight: no answer from the head node's checks; the preflight job ended "
        "with exit code {} (its messages above say why)",
        ran.exit_code);
    return ran.exit_code != exit_codes::k_success ? ran.exit_code : exit_codes::k_store;
  }
  std::vector<preflight::Check> checks;
  try {
    checks = preflight::judge(*answer);
  } catch (const nlohmann::json::exception& error) {
    return fail(ErrorCode::store, "preflight: the head node's answer " + answer_path +
                                      " does not read: " + strings::printable(error.what()));
  }
  bool failed = preflight::any_failed(checks);
  if (launch_options.json) {
    std::cout << preflight::checks_json(*answer, checks).dump(2) << '\n';
  } else if (printed_here(*answer)) {
    std::cout << preflight::checks_table(*answer, checks) << std::flush;
  } else {
    const nlohmann::json& head = (*answer)["ranks"][0];
    std::cout << "preflight " << (failed ? "FAILED" : "passed") << "; the table is on node "
              << preflight::value_of(head, "node_rank", 0) << " ("
              << strings::printable(preflight::value_of(head, "host", std::string("?"))) << ")\n";
  }
  return failed ? exit_codes::k_preflight : exit_codes::k_success;
}

}  // namespace

Expected<int> run_preflight_command(const config::PreflightRequest& request, const EnvMap& env) {
  const config::Options& options = request.options;
  logging::setup_logging(options.verbosity, options.color);
  GANGRUN_TRY_ASSIGN(remote_start, remote::remote_start_for(options));
  if (*remote_start && (*remote_start)->runs_preflight) {
    return (*remote_start)->run(options, request.arguments, env);
  }
  if (options.dry_run) {
    return fail_usage(
        "gangrun preflight --dry-run: a dry run of the job is gangrun --dry-run "
        "with the same options");
  }
  return run_checks(options, env);
}

Expected<int> preflight_before_launch(const config::Options& options, const EnvMap& env) {
  bool many_nodes = options.nnodes > 1 || options.rdzv_backend == config::RendezvousBackend::c10d;
  if (many_nodes) {
    spdlog::info("--preflight: checking this node on its own before it joins the job");
  }
  GANGRUN_TRY_ASSIGN(code, run_checks(many_nodes ? this_node_only(options) : options, env));
  if (*code == exit_codes::k_success) return *code;
  if (many_nodes && options.min_nnodes < options.nnodes) {
    spdlog::error(
        "--preflight: a check failed, so this node does not join the job; the others "
        "go on without it while at least {} nodes are there (--nnodes {}:{})",
        options.min_nnodes, options.min_nnodes, options.nnodes);
  } else if (many_nodes) {
    spdlog::error(
        "--preflight: a check failed, so this node does not join the job; the others "
        "wait for it until their join timeout");
  } else {
    spdlog::error("--preflight: a check failed, so the job was not started");
  }
  return *code;
}

}  // namespace gangrun::commands
