#include "config/command_table.hpp"

#include "store/default_port.hpp"
#include "util/strings.hpp"

namespace gangrun::config {

namespace {

// "serve|get|...|num-keys": a choice of words, as usage lines write it.
std::string alternatives(const std::vector<std::string_view>& words) {
  return strings::join(std::vector<std::string>(words.begin(), words.end()), "|");
}

}  // namespace

const std::vector<SubcommandSpec>& subcommand_table() {
  // Texts that name the default port; they outlive the table that views them.
  static const std::string store_manual =
      "Runs the TCP store standalone, or operates on one as a client (the endpoint is "
      "--endpoint, else $GANGRUN_STORE_ENDPOINT, else MASTER_ADDR:MASTER_PORT, else "
      "127.0.0.1:" +
      std::to_string(store::k_default_port) + "). See 'gangrun store --help'.";
  static const std::vector<SubcommandSpec> table = {
      {.id = Subcommand::devices,
       .name = "devices",
       .arguments = "[--json] [OPTIONS]",
       .summary = "list the accelerators and the masks a launch would give",
       .help_note = "gangrun devices --help",
       .manual = "Lists the accelerators of this node as each vendor runtime numbers them (CUDA, "
                 "Intel XPU through Level Zero, AMD ROCm, CPU), the visibility variables that "
                 "shaped each list, and the mask every worker of a launch with the same options "
                 "would get. Takes every launch option. See 'gangrun devices --help'."},
      {.id = Subcommand::preflight,
       .name = "preflight",
       .arguments = "[--json] [OPTIONS]",
       .summary = "check that the nodes of a launch can run it, in seconds",
       .help_note = "gangrun preflight --help",
       .manual = "Runs a short job with the launch's options on one node or on every node of "
                 "the job, through the same rendezvous, and says what would stop the real one: "
                 "the workers' interpreter importing torch, devices and their masks, free space "
                 "in the log directory, /dev/shm, open-file and locked-memory limits, versions "
                 "and variables that differ between nodes, clock offsets, every node reaching "
                 "the store, and an all-reduce over the gang and node pairs with their "
                 "bandwidth. Exit status 0 when nothing failed, 6 when a check failed. See "
                 "'gangrun preflight --help'."},
      {.id = Subcommand::stacks,
       .name = "stacks",
       .arguments = "[--run-id ID|--pid PID|--log-dir DIR] [--native] [--json]",
       .summary = "print every rank's stack of a running job",
       .help_note = "gangrun stacks --help",
       .manual = "Prints where every rank of a job running on this host is: each worker's Python "
                 "stack, every thread, read with py-spy, the ranks with the same stack grouped "
                 "and the odd ones out first. The job is found by its run id, gangrun's pid or "
                 "its log directory, or is the only one of this user on this host. See 'gangrun "
                 "stacks --help'."},
      {.id = Subcommand::top,
       .name = "top",
       .arguments = "[--run-id ID|--pid PID|--log-dir DIR] [--once] [--json]",
       .summary = "a live view of a running job's ranks",
       .help_note = "gangrun top --help",
       .manual = "Shows every rank of a job running on this host, refreshed "
                 "every second: its node, pid, state, CPU%, resident memory, the age of its last "
                 "output, steps/s where the straggler watch measures it, GPU utilisation and "
                 "memory where NVML is there, restarts, and the marks for hung, stopped and slow "
                 "ranks. Every node's agent answers through the job's store; on one node, through "
                 "a file beside the job's registry entry. q quits; --once "
                 "prints one frame, --json one snapshot. The job is chosen as for stacks. See "
                 "'gangrun top --help'."},
      {.id = Subcommand::report,
       .name = "report",
       .arguments = "RUN_DIR [RUN_DIR ...] [-o FILE]",
       .summary = "draw a finished run's report.html again",
       .help_note = "gangrun report --help",
       .manual = "Writes RUN_DIR/report.html again from RUN_DIR/report.json: the run's picture, a "
                 "timeline with a lane per rank grouped by node, its start, restarts and exit, "
                 "the root cause, the failure window, a hang with its stacks, stopped and slow "
                 "ranks and each rank's last output. RUN_DIR is the directory a run with "
                 "--log-dir DIR made in DIR; gangrun writes both files there when the run "
                 "ends. Several RUN_DIRs, one per node of a job, make one page of every node, "
                 "report-<run_id>.html beside the first, or the FILE of -o. See 'gangrun "
                 "report --help'."},
      {.id = Subcommand::store,
       .name = "store",
       .arguments = alternatives(store_action_names()) + " ...",
       .summary = "operate a TCP store",
       .help_note = "gangrun store --help",
       .manual = store_manual},
      {.id = Subcommand::completion,
       .name = "completion",
       .arguments = alternatives(shell_names()),
       .summary = "print a shell completion script",
       .help_note = "prints a shell completion script",
       .manual = "Prints the completion script for the shell. The package installs all three "
                 "already."},
  };
  return table;
}

const SubcommandSpec* find_subcommand(std::string_view word) {
  for (const SubcommandSpec& spec : subcommand_table()) {
    if (spec.name == word) return &spec;
  }
  return nullptr;
}

const std::vector<std::string_view>& shell_names() {
  static const std::vector<std::string_view> names = {"bash", "zsh", "fish"};
  return names;
}

std::optional<Shell> parse_shell(std::string_view name) {
  if (name == "bash") return Shell::bash;
  if (name == "zsh") return Shell::zsh;
  if (name == "fish") return Shell::fish;
  return std::nullopt;
}

const std::vector<StoreActionSpec>& store_action_table() {
  static const std::vector<StoreActionSpec> table = {
      {"serve", StoreAction::serve, "Run a store server until SIGINT or SIGTERM", ""},
      {"get", StoreAction::get, "Print KEY's value, waiting up to --timeout for KEY to be set", ""},
      {"set", StoreAction::set, "Set KEY to VALUE, or to standard input without VALUE", ""},
      {"add", StoreAction::add, "Add DELTA (default 1) to the counter KEY and print its new value",
       ""},
      {"wait", StoreAction::wait, "Wait up to --timeout until every KEY is set", ""},
      {"check", StoreAction::check, "Exit 0 if every KEY is set, 1 if one is not", ""},
      {"delete", StoreAction::delete_key, "Delete KEY: exit 0 if it was set, 1 if not", ""},
      {"keys", StoreAction::keys, "Print every key, one per line (validated dialect)", ""},
      {"num-keys", StoreAction::num_keys, "Print how many keys the store holds", "num_keys"},
  };
  return table;
}

const std::vector<std::string_view>& store_action_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const StoreActionSpec& spec : store_action_table()) out.push_back(spec.name);
    return out;
  }();
  return names;
}

const std::vector<StoreOptionWord>& store_option_words() {
  static const std::string default_port_text = std::to_string(store::k_default_port);
  static const std::vector<StoreOptionWord> words = {
      {.name = "endpoint", .metavar = "HOST:PORT", .help = "The store, as HOST:PORT"},
      {.name = "timeout",
       .metavar = "SECONDS",
       .default_text = "300",
       .help = "Limit for connecting and for each operation, a wait included"},
      {.name = "dialect",
       .metavar = "DIALECT",
       .choices = {"validated", "legacy"},
       .default_text = "validated",
       .help = "validated: PyTorch 2.x or gangrun's store; legacy: PyTorch 1.13's store"},
      {.name = "raw-keys", .help = "Send keys as typed, without the \"/\" PyTorch puts first"},
      {.name = "host",
       .metavar = "HOST",
       .serve = true,
       .default_text = "127.0.0.1",
       .help = "Address or name to bind; \"::\" for every interface"},
      {.name = "port",
       .metavar = "PORT",
       .serve = true,
       .default_text = default_port_text,
       .help = "Port to listen on; 0 for any free port"},
      {.name = "port-file",
       .metavar = "FILE",
       .value_hint = ValueHint::file,
       .serve = true,
       .help = "Write the port listened on to FILE once listening"},
      {.name = "max-key-bytes",
       .metavar = "N",
       .serve = true,
       .help = "Longest key; a client sending a longer one is disconnected"},
      {.name = "max-value-bytes",
       .metavar = "N",
       .serve = true,
       .help = "Longest value; a client sending a longer one is disconnected"},
      {.name = "max-keys-per-request",
       .metavar = "N",
       .serve = true,
       .help = "Most keys in one CHECK, WAIT or MULTI_GET/SET"},
      {.name = "max-store-bytes",
       .metavar = "N",
       .serve = true,
       .help = "Most bytes of keys and values held in all"},
      {.name = "max-connections",
       .metavar = "N",
       .serve = true,
       .help = "Most client connections open at once"},
      {.name = "max-connections-per-address",
       .metavar = "N",
       .serve = true,
       .help = "Most silent client connections (none of their requests served yet) open at "
               "once from one address; 0 for no limit"},
      {.name = "max-store-bytes-per-address",
       .metavar = "N",
       .serve = true,
       .help = "Most bytes of keys and values the clients of one address may hold; 0 for no "
               "limit"},
  };
  return words;
}

}  // namespace gangrun::config
