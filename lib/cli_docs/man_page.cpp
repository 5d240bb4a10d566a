#include "cli_docs/man_page.hpp"

#include "config/command_table.hpp"
#include "config/layering.hpp"
#include "config/option_table.hpp"
#include "util/exit_codes.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace gangrun::cli_docs {

using namespace config;

namespace {

// One .TP item: a term shown in bold and its explanation, both plain text.
struct Item {
  std::string_view term;
  std::string_view text;
};

constexpr std::string_view k_name_line =
    "gangrun \\- start and supervise a gang of worker processes, like torchrun";

constexpr std::string_view k_description[] = {
    "gangrun starts PROGRAM as a gang of worker processes on this node, gives each torchrun's "
    "rank environment and its accelerator visibility mask, hosts the TCP store the workers "
    "rendezvous through (wire-compatible with PyTorch's TCPStore), streams their output line by "
    "line behind a rank prefix, and supervises them as one: when one worker fails, the others may "
    "end by themselves for a short failure window (--failure-window) and are then stopped, "
    "everything the job started is cleaned up, the root cause is reported, and the first "
    "failure's exit code is gangrun's.",
    "It accepts the spellings of torchrun, accelerate launch and deepspeed. Every long option "
    "may be written --snake_case or --dash-case, with its value as '--opt V' or '--opt=V'. "
    "Everything from PROGRAM on is passed to it untouched; -- ends the options, so "
    "'gangrun -- devices' runs a program called devices.",
    "Which program runs: -m runs 'PYTHON -u -m PROGRAM ARGS'; --no_python executes PROGRAM "
    "directly; otherwise a PROGRAM ending in .py (or an existing file that is not executable) "
    "runs as 'PYTHON -u PROGRAM ARGS', and anything else is executed directly through PATH. "
    "PYTHON is --python, else $PYTHON_EXEC, else python3 on PATH. ${local_rank} in ARGS becomes "
    "each worker's local rank. All of it is resolved, and every option checked, before any "
    "process starts.",
    "Each worker runs in a session of its own and dies with gangrun. When a worker exits non-zero "
    "or by a signal, the others may go on for the failure window, --failure-window seconds "
    "(default 1), and end by themselves; the window closes as soon as every worker has ended, and "
    "--failure-window 0 stops the others at once. Then every worker still running gets SIGTERM to "
    "its process group, and SIGKILL after --term-timeout seconds. The root cause is the rank the "
    "failed ones were waiting for when gangrun can tell (one still running when two or more others "
    "failed, or one that exited 0 before anyone failed), else the first to fail; the exit code is "
    "the first failure's. With --max_restarts left the whole gang starts again. The signals of "
    "--signals_to_handle sent to gangrun are forwarded to every worker and stop the gang; SIGUSR1 "
    "and SIGUSR2 are forwarded and the job goes on.",
};

constexpr std::string_view k_layers =
    "An option not given on the command line is read from the environment variable "
    "GANGRUN_<NAME>, else PET_<NAME> (torchrun's convention, as Kubeflow's PyTorchJob sets it), "
    "else from the JSON object of the --config file (keys are long option names), else its "
    "default. NAME is the option's snake_case name in capitals: GANGRUN_NPROC_PER_NODE, "
    "PET_NNODES. 'gangrun --dry-run -v' shows where each value came from.";

constexpr Item k_read_variables[] = {
    {"GANGRUN_CUDA_LIBRARY", "The CUDA driver library to open. Default libcuda.so.1."},
    {"GANGRUN_LEVEL_ZERO_LIBRARY",
     "The Level Zero loader to open for Intel GPUs. Default libze_loader.so.1."},
    {"GANGRUN_SYSFS_ROOT",
     "The directory that stands for / when the AMD KFD topology is read from "
     "/sys/class/kfd/kfd/topology. Default /."},
    {"GANGRUN_STORE_ENDPOINT", "HOST:PORT of the store for the gangrun store clients."},
    {"PYTHON_EXEC", "The Python interpreter when --python is not given."},
    {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "The line prefix when --log-prefix is not given."},
    {"TORCHELASTIC_ERROR_FILE",
     "When set in gangrun's own environment, the root cause of a failure is copied there, as "
     "torchrun does."},
    {"NO_COLOR", "When not empty and --color is not given, gangrun's messages have no color."},
    {"CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, ZE_AFFINITY_MASK, ZE_ENABLE_PCI_ID_DEVICE_ORDER, "
     "ZE_FLAT_DEVICE_HIERARCHY, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, "
     "HABANA_VISIBLE_MODULES, ASCEND_RT_VISIBLE_DEVICES, NEURON_RT_VISIBLE_CORES",
     "Read as the vendor runtime reads them, to number the devices a worker would see; entries "
     "the runtime would silently misread are an error. Workers inherit them unchanged unless a "
     "selection option or --visible-devices per-rank gives each its own mask."},
};

constexpr Item k_worker_variables[] = {
    {"LOCAL_RANK", "Index of the worker on this node."},
    {"RANK, ROLE_RANK", "Global rank: node_rank * nproc_per_node + local_rank."},
    {"GROUP_RANK", "The node rank."},
    {"ROLE_NAME", "--role (default default)."},
    {"LOCAL_WORLD_SIZE", "Workers on this node."},
    {"WORLD_SIZE, ROLE_WORLD_SIZE", "Workers in the job."},
    {"GROUP_WORLD_SIZE", "Nodes."},
    {"MASTER_ADDR, MASTER_PORT",
     "The store gangrun hosts: --master_addr (default 127.0.0.1) and --master_port; a "
     "single-node job without --master_port gets a free port."},
    {"TORCHELASTIC_RESTART_COUNT", "0, then 1, 2, ... after each restart of the gang."},
    {"TORCHELASTIC_MAX_RESTARTS", "--max_restarts."},
    {"TORCHELASTIC_RUN_ID", "--rdzv_id (default none; random with --standalone)."},
    {"TORCHELASTIC_USE_AGENT_STORE", "True: every rank is a client of the store gangrun hosts."},
    {"TORCHELASTIC_ERROR_FILE",
     "<run dir>/attempt_<n>/<local_rank>/error.json, where torch.distributed.elastic's @record "
     "writes the exception."},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING, NCCL_ASYNC_ERROR_HANDLING", "Kept if set, else 1."},
    {"OMP_NUM_THREADS",
     "Kept if set; 1 when unset and more than one worker runs on the node. Under accelerate's "
     "flags, accelerate's rule (--num_cpu_threads_per_process, else kept, else under --cpu the "
     "physical cores shared among the processes, else 1); a worker pinned by "
     "--bind_cores_to_rank gets the size of its core share."},
    {"CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK (with ZE_FLAT_DEVICE_HIERARCHY), "
     "ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES, HABANA_VISIBLE_MODULES, "
     "ASCEND_RT_VISIBLE_DEVICES, NEURON_RT_VISIBLE_CORES",
     "Inherited unchanged, unless a selection option or --visible-devices per-rank gives the "
     "worker its own mask."},
};

// As docs/store.md's table says them (tests/integration/test_man_page.py compares the two).
constexpr Item k_store_exit_statuses[] = {
    {"0", "done"},
    {"1", "check: a key is missing; delete: there was no such key"},
    {"2", "usage error"},
    {"3", "the store could not be reached, a wait or operation timed out, or the store failed"},
};

constexpr Item k_examples[] = {
    {"Four workers of a training script, as torchrun would start them:",
     "gangrun --nproc_per_node 4 train.py --epochs 3"},
    {"The first of two nodes, in accelerate's spelling:",
     "gangrun --num_processes 8 --nnodes 2 --node_rank 0 \\\n"
     "        --master_addr node0 --master_port 29500 train.py"},
    {"An elastic job on 2 to 4 nodes, the same command on each (torchrun's c10d rendezvous):",
     "gangrun --nnodes 2:4 --nproc_per_node 8 --rdzv_backend c10d \\\n"
     "        --rdzv_endpoint node0:29400 train.py"},
    {"Any program, not only Python:", "gangrun -n 4 --no_python ./a.out"},
    {"One worker per GPU, each seeing only its own:",
     "gangrun --nproc_per_node gpu --visible-devices per-rank -m mypackage.train"},
    {"What would run, with every variable and where each option value came from:",
     "gangrun --dry-run -v --nproc_per_node 2 train.py"},
    {"The same option from the environment:", "GANGRUN_NPROC_PER_NODE=2 gangrun train.py"},
    {"The devices of this node, for tools:", "gangrun devices --json"},
};

bool is_option_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

// "-m" or "--dry-run" begins at text[at]: a dash after a word boundary,
// followed by a letter or by a second dash and a letter.
bool starts_option(std::string_view text, std::size_t at) {
  auto letter = [&text](std::size_t i) {
    return i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])) != 0;
  };
  if (text[at] != '-') return false;
  if (at > 0 && text.substr(at - 1, 1).find_first_of(" (/,[") == std::string_view::npos) {
    return false;
  }
  return letter(at + 1) || (at + 1 < text.size() && text[at + 1] == '-' && letter(at + 2));
}

std::string bold(std::string_view text) { return "\\fB" + roff_escape(text) + "\\fR"; }

std::string italic(std::string_view text) { return "\\fI" + roff_escape(text) + "\\fR"; }

// Escaped text with option names in bold, as man pages set them.
std::string prose(std::string_view text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = at;
    if (starts_option(text, at)) {
      while (end < text.size() && is_option_char(text[end])) ++end;
      out += bold(text.substr(at, end - at));
    } else {
      while (end < text.size() && (end == at || !starts_option(text, end))) ++end;
      out += roff_escape(text.substr(at, end - at));
    }
    at = end;
  }
  return out;
}

std::string sentence(std::string_view text) {
  std::string out(text);
  if (!out.empty() && out.back() != '.') out += '.';
  return out;
}

std::string bold_list(const std::vector<std::string>& words, std::string_view prefix = "") {
  std::vector<std::string> parts;
  parts.reserve(words.size());
  for (const std::string& word : words) parts.push_back(bold(std::string(prefix) + word));
  return strings::join(parts, ", ");
}

// A usage line's words in the type faces of a synopsis: metavariables (words
// in capitals) italic, every other word bold (options, subcommands, values);
// brackets, bars, spaces and "..." upright.
std::string synopsis_words(std::string_view usage) {
  std::string out;
  std::size_t at = 0;
  while (at < usage.size()) {
    if (std::string_view("[]| ").find(usage[at]) != std::string_view::npos) {
      out += usage[at++];
      continue;
    }
    std::size_t end = std::min(usage.find_first_of("[]| ", at), usage.size());
    std::string_view word = usage.substr(at, end - at);
    std::string_view repeat;
    if (word.ends_with("...")) {
      repeat = word.substr(word.size() - 3);
      word.remove_suffix(3);
    }
    bool metavariable = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return std::isupper(static_cast<unsigned char>(c)) != 0;
    });
    if (!word.empty()) out += metavariable ? italic(word) : bold(word);
    out += repeat;
    at = end;
  }
  return out;
}

void append_synopsis(std::string& out) {
  out += ".B gangrun\n" + synopsis_words("[OPTIONS] [--] PROGRAM [ARGS...]") + "\n";
  for (const SubcommandSpec& subcommand : subcommand_table()) {
    out += ".br\n.B gangrun " + std::string(subcommand.name) + "\n" +
           synopsis_words(subcommand.arguments) + "\n";
  }
  out += ".br\n.B gangrun\n" + synopsis_words("--version | --help") + "\n";
}

void append_subcommands(std::string& out) {
  for (const SubcommandSpec& subcommand : subcommand_table()) {
    const std::string usage =
        "gangrun " + std::string(subcommand.name) + " " + subcommand.arguments;
    out += ".TP\n" + bold(usage) + "\n" + prose(subcommand.manual) + "\n";
  }
}

void append_items(std::string& out, const Item* begin, const Item* end) {
  for (const Item* item = begin; item != end; ++item) {
    out += ".TP\n" + bold(item->term) + "\n" + prose(item->text) + "\n";
  }
}

// The option's own name in both spellings, the one --help shows first; its
// aliases are every other long spelling.
std::vector<std::string> name_spellings(const OptionSpec& spec) {
  std::vector<std::string> names{display_name(spec).substr(2)};
  for (const std::string& spelling : long_spellings(spec)) {
    if (snake_case(spelling) == spec.name && spelling != names.front()) names.push_back(spelling);
  }
  return names;
}

std::vector<std::string> alias_spellings(const OptionSpec& spec) {
  std::vector<std::string> aliases;
  for (const std::string& spelling : long_spellings(spec)) {
    if (snake_case(spelling) != spec.name) aliases.push_back(spelling);
  }
  return aliases;
}

std::string option_tag(const OptionSpec& spec) {
  std::string tag;
  if (spec.short_name != 0) tag += bold(std::string("-") + spec.short_name) + ", ";
  tag += bold_list(name_spellings(spec), "--");
  if (!spec.metavar.empty()) tag += " " + italic(spec.metavar);
  return tag;
}

// One sentence a line, as roff wants sentences.
std::string option_body(const OptionSpec& spec) {
  std::vector<std::string> lines{prose(sentence(spec.help))};
  if (std::vector<std::string> aliases = alias_spellings(spec); !aliases.empty()) {
    lines.push_back("Also " + bold_list(aliases, "--") + ".");
  }
  if (spec.kind == OptionKind::counter)
    lines.push_back("Repeat it to add up (" + bold("-vv") + ").");
  if (!spec.choices.empty()) {
    lines.push_back("One of " +
                    bold_list(std::vector<std::string>(spec.choices.begin(), spec.choices.end())) +
                    ".");
  }
  if (spec.kind == OptionKind::value && !spec.default_text.empty()) {
    lines.push_back("Default " + bold(spec.default_text) + ".");
  }
  if (!spec.command_line_only) {
    lines.push_back("Environment: " +
                    bold_list({env_name("GANGRUN_", spec.name), env_name("PET_", spec.name)}) +
                    ".");
  }
  return strings::join(lines, "\n");
}

void append_options(std::string& out) {
  const std::vector<OptionSpec>& table = option_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i == 0 || table[i].group != table[i - 1].group) {
      out += ".SS \"" + roff_escape(to_string(table[i].group)) + "\"\n";
    }
    out += ".TP\n" + option_tag(table[i]) + "\n" + option_body(table[i]) + "\n";
  }
}

// The launch's codes from the one table docs/supervision.md shows too.
void append_exit_status(std::string& out) {
  out += ".SH \"EXIT STATUS\"\nA launch exits with:\n";
  for (const exit_codes::Outcome& outcome : exit_codes::k_outcomes) {
    out += ".TP\n" + bold(outcome.code) + "\n" + prose(outcome.meaning) + "\n";
  }
  out += ".PP\n" + bold("gangrun store") + " clients exit with:\n";
  append_items(out, std::begin(k_store_exit_statuses), std::end(k_store_exit_statuses));
}

void append_examples(std::string& out) {
  out += ".SH EXAMPLES\n";
  for (const Item& example : k_examples) {
    out += ".PP\n" + prose(example.term) + "\n.PP\n.RS 4\n.nf\n" + roff_escape(example.text) +
           "\n.fi\n.RE\n";
  }
}

}  // namespace

std::string roff_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool line_start = true;
  for (char c : text) {
    if (line_start && c == '.') out += "\\&";
    line_start = false;
    switch (c) {
      case '\\':
        out += "\\e";
        break;
      case '-':
        out += "\\-";
        break;
      case '\'':
        out += "\\(aq";
        break;
      case '`':
        out += "\\(ga";
        break;
      case '"':
        out += "\\(dq";
        break;
      case '\n':
        out += '\n';
        line_start = true;
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string man_page(std::string_view version) {
  std::string out =
      ".\\\" gangrun(1), generated by tools/gen_man from lib/config/option_table.cpp.\n"
      ".TH GANGRUN 1 \"\" \"" +
      roff_escape(std::string("gangrun ") + std::string(version)) + "\" \"User Commands\"\n";
  // Option and variable names are long words with '_' and '-'; hyphenating
  // them, or stretching a line around them, makes them harder to copy.
  out += ".nh\n.ad l\n";
  out += ".SH NAME\n" + std::string(k_name_line) + "\n";
  out += ".SH SYNOPSIS\n";
  append_synopsis(out);
  out += ".SH DESCRIPTION\n";
  for (std::string_view paragraph : k_description) out += ".PP\n" + prose(paragraph) + "\n";
  out += ".SS Subcommands\n";
  append_subcommands(out);
  out += ".SH OPTIONS\n";
  append_options(out);
  out += ".SH ENVIRONMENT\n.PP\n" + prose(k_layers) + "\n.SS \"Read by gangrun\"\n";
  append_items(out, std::begin(k_read_variables), std::end(k_read_variables));
  out += ".SS \"Set for every worker\"\nThe launcher's environment plus exactly these:\n";
  append_items(out, std::begin(k_worker_variables), std::end(k_worker_variables));
  append_exit_status(out);
  append_examples(out);
  out += ".SH \"SEE ALSO\"\n.BR srun (1),\n.BR ssh (1),\n.BR mpirun (1)\n.PP\n" +
         prose(
             "gangrun starts itself on other nodes through srun, ssh or Open MPI's mpirun "
             "(--launcher). The full reference (flags, environment, devices, many nodes, Slurm, "
             "ssh, the store, supervision, hangs, preflight) is README.md and the pages in docs/ "
             "of gangrun's source. The Debian package installs them, compressed, in "
             "/usr/share/doc/gangrun/; cmake --install puts them in share/doc/gangrun/ under its "
             "prefix.") +
         "\n";
  return out;
}

}  // namespace gangrun::cli_docs
