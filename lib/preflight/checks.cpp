#include "preflight/checks.hpp"

#include "preflight/json_fields.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace gangrun::preflight {

using nlohmann::json;

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return "ok";
    case Verdict::warn:
      return "warn";
    case Verdict::fail:
      return "FAIL";
    case Verdict::skipped:
      return "skipped";
  }
  return "?";
}

bool any_failed(const std::vector<Check>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const Check& check) { return check.verdict == Verdict::fail; });
}

namespace {

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
}

std::string rate_text(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9); }

std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  return value.dump();
}

// The facts of each node, from its first worker (the one that reads the
// node's limits); the order of their node ranks.
struct Node {
  int node_rank = 0;
  std::string name;  // "node 1 (host-b)"
  const json* facts = nullptr;
};

std::vector<Node> nodes_of(const json& facts) {
  std::vector<Node> nodes;
  for (const json& rank : field(facts, fact::result::ranks)) {
    if (rank.is_null() || value_of(rank, fact::rank::local_rank, -1) != 0) continue;
    int node_rank = value_of(rank, fact::rank::node_rank, 0);
    nodes.push_back(
        {node_rank,
         fmt::format("node {} ({})", node_rank, value_of(rank, fact::rank::host, std::string("?"))),
         &rank});
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const Node& a, const Node& b) { return a.node_rank < b.node_rank; });
  return nodes;
}

std::string every(const std::vector<Node>& nodes) {
  return nodes.size() == 1 ? nodes.front().name : fmt::format("all {} nodes", nodes.size());
}

// A check made node by node: a row for each node that did not pass, or one
// row for all of them when every node passed.
template <typename Judge>
void per_node(std::vector<Check>& out, const std::vector<Node>& nodes, const std::string& name,
              const std::string& all_passed, Judge&& judge_node) {
  std::vector<Check> judged;
  judged.reserve(nodes.size());
  for (const Node& node : nodes) {
    Check check = judge_node(node);
    check.name = name;
    check.where = node.name;
    judged.push_back(std::move(check));
  }
  bool all_passed_here = std::all_of(judged.begin(), judged.end(), [](const Check& check) {
    return check.verdict == Verdict::pass;
  });
  if (!all_passed_here || judged.size() == 1) {
    // One node: what was seen says more than a summary. Several: the rows
    // of the nodes that did not pass.
    for (Check& check : judged) {
      if (judged.size() == 1 || check.verdict != Verdict::pass) out.push_back(std::move(check));
    }
  } else if (!judged.empty()) {
    out.push_back({.name = name,
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = all_passed,
                   .fix = {}});
  }
}

void check_store(std::vector<Check>& out, const json& facts, const std::vector<Node>& nodes) {
  const json& silent = field(facts, fact::result::silent_ranks);
  int world = value_of(facts, fact::result::world_size, 0);
  // Refused facts, none missing: the seals row says which.
  if (silent.empty() && !field(facts, fact::result::refused).empty()) return;
  if (silent.empty()) {
    out.push_back({.name = "store",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = fmt::format("all {} ranks reached the store at {}", world,
                                         value_of(facts, fact::result::store, std::string("?"))),
                   .fix = {}});
    return;
  }
  std::vector<int> ranks = silent.get<std::vector<int>>();
  out.push_back({.name = "store",
                 .where = "ranks " + strings::join_numbers(ranks, ", "),
                 .verdict = Verdict::fail,
                 .detail = fmt::format("{} of {} ranks sent nothing to the store at {} within {} s",
                                       ranks.size(), world,
                                       value_of(facts, fact::result::store, std::string("?")),
                                       value_of(facts, fact::result::timeout_s, 0.0)),
                 .fix =
                     "look at those ranks' lines above: an interpreter that hangs on import, or a "
                     "node that reached the rendezvous but whose workers cannot reach the store"});
}

void check_torch(std::vector<Check>& out, const std::vector<Node>& nodes) {
  std::set<std::string> versions;
  for (const Node& node : nodes) {
    const json& torch = field(*node.facts, fact::rank::torch);
    if (has(torch, fact::torch::version)) {
      versions.insert(field(torch, fact::torch::version).get<std::string>());
    }
  }
  per_node(
      out, nodes, "torch",
      "imports torch " + strings::join({versions.begin(), versions.end()}, ", "),
      [](const Node& node) {
        const json& torch = field(*node.facts, fact::rank::torch);
        const json& python = field(*node.facts, fact::rank::python);
        std::string interpreter = value_of(python, fact::python::executable, std::string("python"));
        if (!has(torch, fact::torch::error)) {
          return Check{.name = {},
                       .where = {},
                       .verdict = Verdict::pass,
                       .detail = fmt::format("{} imports torch {}", interpreter,
                                             text_of(field(torch, fact::torch::version))),
                       .fix = {}};
        }
        return Check{.name = {},
                     .where = {},
                     .verdict = Verdict::fail,
                     .detail = interpreter +
                               " cannot import torch: " + text_of(field(torch, fact::torch::error)),
                     .fix = "install torch for " + interpreter +
                            ", or choose the workers' interpreter with --python (or PYTHON_EXEC)"};
      });
}

constexpr const char* k_cpu_only = "CPU workers, no accelerator";

void check_devices(std::vector<Check>& out, const json& facts, const std::vector<Node>& nodes) {
  // The masks of every rank of a node, as the launch gave them.
  std::map<int, std::vector<std::string>> masks;
  for (const json& rank : field(facts, fact::result::ranks)) {
    if (rank.is_null()) continue;
    std::string mask;
    for (const auto& [name, value] : field(rank, fact::rank::masks).items()) {
      mask = name + "=" + value.get<std::string>();
    }
    if (!mask.empty()) masks[value_of(rank, fact::rank::node_rank, 0)].push_back(mask);
  }
  std::vector<Check> rows;
  for (const Node& node : nodes) {
    const json& gangrun_view = field(*node.facts, fact::rank::node);
    const json& torch = field(*node.facts, fact::rank::torch);
    std::string kind = value_of(gangrun_view, fact::node::kind, std::string("cpu"));
    int found = value_of(gangrun_view, fact::node::devices, 0);
    Check check{
        .name = "devices", .where = node.name, .verdict = Verdict::pass, .detail = {}, .fix = {}};
    if (kind == "cpu" || found == 0) {
      check.detail = k_cpu_only;
    } else {
      std::string driver = value_of(gangrun_view, fact::node::driver, std::string());
      const std::vector<std::string>& node_masks = masks[node.node_rank];
      check.detail = fmt::format("{} {} device(s){}; masks: {}", found, kind,
                                 driver.empty() ? "" : ", driver " + driver,
                                 node_masks.empty() ? "none (every worker sees every device)"
                                                    : strings::join(node_masks, " "));
      if (kind == "cuda" && has(torch, fact::torch::cuda_error)) {
        check.verdict = Verdict::fail;
        check.detail += "; torch: " + text_of(field(torch, fact::torch::cuda_error));
        check.fix = "the driver and torch's CUDA do not work together: see torch's message";
      } else if (kind == "cuda" && has(torch, fact::torch::version) &&
                 value_of(torch, fact::torch::cuda_devices, 0) == 0) {
        check.verdict = Verdict::fail;
        const json& built_for = field(torch, fact::torch::cuda);
        check.detail += fmt::format("; but torch {} sees no CUDA device ({})",
                                    text_of(field(torch, fact::torch::version)),
                                    built_for.is_null() ? std::string("a CPU build")
                                                        : "built for CUDA " + text_of(built_for));
        check.fix = "install a CUDA build of torch that this driver supports";
      }
    }
    rows.push_back(std::move(check));
  }
  bool all_cpu = std::all_of(rows.begin(), rows.end(), [](const Check& row) {
    return row.verdict == Verdict::pass && row.detail == k_cpu_only;
  });
  if (all_cpu && rows.size() > 1) {
    out.push_back({.name = "devices",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = k_cpu_only,
                   .fix = {}});
    return;
  }
  for (Check& row : rows) out.push_back(std::move(row));
}

void check_space(std::vector<Check>& out, const std::vector<Node>& nodes, const char* name,
                 const Field& member, double warn_below, std::optional<double> fail_below,
                 const std::string& fix) {
  double least = -1;
  for (const Node& node : nodes) {
    const json& space = field(*node.facts, member);
    if (has(space, fact::space::free) &&
        (least < 0 || field(space, fact::space::free).get<double>() < least)) {
      least = field(space, fact::space::free).get<double>();
    }
  }
  per_node(
      out, nodes, name, fmt::format("at least {} free", bytes_text(least)), [&](const Node& node) {
        const json& space = field(*node.facts, member);
        std::string path = value_of(space, fact::space::path, std::string("?"));
        if (has(space, fact::space::error)) {
          return Check{.name = {},
                       .where = {},
                       .verdict = Verdict::warn,
                       .detail = path + ": " + text_of(field(space, fact::space::error)),
                       .fix = fix};
        }
        double free = value_of(space, fact::space::free, 0.0);
        double size = value_of(space, fact::space::size, 0.0);
        // /dev/shm is judged by its size: what is free now is another job's business.
        double judged = &member == &fact::rank::shm ? size : free;
        Verdict verdict = Verdict::pass;
        if (fail_below && judged < *fail_below) {
          verdict = Verdict::fail;
        } else if (judged < warn_below) {
          verdict = Verdict::warn;
        }
        return Check{
            .name = {},
            .where = {},
            .verdict = verdict,
            .detail = fmt::format("{}: {} free of {}", path, bytes_text(free), bytes_text(size)),
            .fix = verdict == Verdict::pass ? "" : fix};
      });
}

std::string limit_text(const json& value, bool bytes) {
  if (value.is_null()) return "unlimited";
  return bytes ? bytes_text(value.get<double>()) : std::to_string(value.get<long long>());
}

void check_limits(std::vector<Check>& out, const std::vector<Node>& nodes,
                  const Thresholds& thresholds) {
  per_node(out, nodes, "open files", "soft limit high enough", [&](const Node& node) {
    const json& limit = field(*node.facts, fact::rank::open_files);
    const json& soft = field(limit, fact::limit::soft);
    bool low = !soft.is_null() && soft.get<double>() < thresholds.open_files_warn;
    return Check{
        .name = {},
        .where = {},
        .verdict = low ? Verdict::warn : Verdict::pass,
        .detail = fmt::format("soft {}, hard {}", limit_text(soft, false),
                              limit_text(field(limit, fact::limit::hard), false)),
        .fix = low ? fmt::format("raise it before the launch (ulimit -n {}): data loaders "
                                 "sharing tensors through files and many ranks need descriptors",
                                 limit_text(field(limit, fact::limit::hard), false))
                   : ""};
  });
  per_node(out, nodes, "memlock", "locked-memory limit enough for RDMA", [&](const Node& node) {
    const json& limit = field(*node.facts, fact::rank::memlock);
    const json& soft = field(limit, fact::limit::soft);
    bool accelerators = value_of(field(*node.facts, fact::rank::node), fact::node::devices, 0) > 0;
    bool low =
        accelerators && !soft.is_null() && soft.get<double>() < thresholds.memlock_warn_bytes;
    return Check{.name = {},
                 .where = {},
                 .verdict = low ? Verdict::warn : Verdict::pass,
                 .detail = fmt::format("soft {}", limit_text(soft, true)),
                 .fix = low ? "NCCL over InfiniBand or RoCE registers its buffers: set memlock "
                              "unlimited (limits.conf, or the container's --ulimit memlock=-1)"
                            : ""};
  });
}

// "1.13.1 on node 0 (a); 2.13.0 on node 1 (b)": one entry per value.
std::string diff_text(const std::map<std::string, std::vector<std::string>>& where_each) {
  std::vector<std::string> parts;
  parts.reserve(where_each.size());
  for (const auto& [value, names] : where_each) {
    parts.push_back(value + " on " + strings::join(names, ", "));
  }
  return strings::join(parts, "; ");
}

void check_versions(std::vector<Check>& out, const std::vector<Node>& nodes) {
  if (nodes.size() < 2) return;
  struct Compared {
    const char* label;
    std::function<std::string(const json&)> read;
    bool patch_is_warning;
  };
  auto minor = [](const std::string& version) {
    std::vector<std::string> parts = strings::split(version, '.');
    return parts.size() >= 2 ? parts[0] + "." + parts[1] : version;
  };
  std::vector<Compared> compared = {
      {"Python",
       [](const json& f) {
         return text_of(field(field(f, fact::rank::python), fact::python::version));
       },
       true},
      {"torch",
       [](const json& f) {
         return text_of(field(field(f, fact::rank::torch), fact::torch::version));
       },
       false},
      {"CUDA",
       [](const json& f) { return text_of(field(field(f, fact::rank::torch), fact::torch::cuda)); },
       false},
      {"NCCL",
       [](const json& f) { return text_of(field(field(f, fact::rank::torch), fact::torch::nccl)); },
       false},
  };
  std::vector<std::string> failed;
  std::vector<std::string> warned;
  for (const Compared& what : compared) {
    std::map<std::string, std::vector<std::string>> where_each;
    std::set<std::string> minors;
    for (const Node& node : nodes) {
      // A node without torch fails the torch check; its versions say nothing more.
      bool imports_torch = !has(field(*node.facts, fact::rank::torch), fact::torch::error);
      if (what.label != std::string_view("Python") && !imports_torch) continue;
      std::string value = what.read(*node.facts);
      where_each[value].push_back(node.name);
      minors.insert(minor(value));
    }
    if (where_each.size() < 2) continue;
    std::string line = std::string(what.label) + " " + diff_text(where_each);
    (what.patch_is_warning && minors.size() == 1 ? warned : failed).push_back(line);
  }
  if (failed.empty() && warned.empty()) {
    out.push_back({.name = "versions",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = "Python, torch, CUDA and NCCL alike on every node",
                   .fix = {}});
    return;
  }
  if (!failed.empty()) {
    out.push_back({.name = "versions",
                   .where = "nodes differ",
                   .verdict = Verdict::fail,
                   .detail = strings::join(failed, " | "),
                   .fix = "install the same versions on every node (one image or environment): "
                          "ranks with different torch builds fail or hang in their first "
                          "collective"});
  }
  if (!warned.empty()) {
    out.push_back({.name = "versions",
                   .where = "nodes differ",
                   .verdict = Verdict::warn,
                   .detail = strings::join(warned, " | "),
                   .fix = "the same minor version usually works; one environment for every node "
                          "is safer"});
  }
}

void check_variables(std::vector<Check>& out, const std::vector<Node>& nodes) {
  if (nodes.size() < 2) return;
  std::set<std::string> names;
  for (const Node& node : nodes) {
    for (const auto& [name, value] : field(*node.facts, fact::rank::variables).items()) {
      names.insert(name);
    }
  }
  std::vector<std::string> differing;
  for (const std::string& name : names) {
    std::map<std::string, std::vector<std::string>> where_each;
    for (const Node& node : nodes) {
      const json& variables = field(*node.facts, fact::rank::variables);
      where_each[variables.contains(name) ? strings::quoted(text_of(variables[name])) : "unset"]
          .push_back(node.name);
    }
    if (where_each.size() > 1) differing.push_back(name + ": " + diff_text(where_each));
  }
  if (differing.empty()) {
    out.push_back({.name = "variables",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = fmt::format("{} NCCL_, GLOO_, TORCH_, CUDA_, OMP_, LD_ and PYTHON "
                                         "variables alike on every node",
                                         names.size()),
                   .fix = {}});
    return;
  }
  out.push_back({.name = "variables",
                 .where = "nodes differ",
                 .verdict = Verdict::warn,
                 .detail = strings::join(differing, " | "),
                 .fix = "set them alike on every node (the job's environment or its batch "
                        "script), unless the difference is meant"});
}

// The collectives' answer of the first worker of each node, by node rank.
std::map<int, const json*> collectives_by_node(const json& facts) {
  std::map<int, const json*> by_node;
  const json& collectives = field(facts, fact::result::collectives);
  const json& ranks = field(facts, fact::result::ranks);
  if (!collectives.is_array() || !ranks.is_array()) return by_node;
  for (std::size_t rank = 0; rank < collectives.size() && rank < ranks.size(); ++rank) {
    if (value_of(ranks[rank], fact::rank::local_rank, -1) != 0) continue;
    by_node[value_of(ranks[rank], fact::rank::node_rank, 0)] = &collectives[rank];
  }
  return by_node;
}

// Rank RANK's facts, or null when it sent none (or there is no such rank).
const json& facts_of_rank(const json& facts, int rank) {
  static const json k_none;
  const json& ranks = field(facts, fact::result::ranks);
  if (!ranks.is_array() || rank < 0 || static_cast<std::size_t>(rank) >= ranks.size()) {
    return k_none;
  }
  return ranks[static_cast<std::size_t>(rank)];
}

std::string node_name_of_rank(const json& facts, int rank) {
  const json& of_rank = facts_of_rank(facts, rank);
  if (of_rank.is_null()) return fmt::format("rank {}", rank);
  return fmt::format("node {} ({})", value_of(of_rank, fact::rank::node_rank, 0),
                     value_of(of_rank, fact::rank::host, std::string("?")));
}

void check_clock(std::vector<Check>& out, const json& facts, const std::vector<Node>& nodes,
                 const Thresholds& thresholds) {
  if (nodes.size() < 2 || !has(facts, fact::result::collectives)) return;
  std::vector<std::string> off;
  double largest = 0;
  for (const auto& [node_rank, answer] : collectives_by_node(facts)) {
    double offset = value_of(*answer, fact::collectives::clock_offset_s, 0.0);
    largest = std::max(largest, std::abs(offset));
    if (std::abs(offset) > thresholds.clock_warn_s) {
      off.push_back(fmt::format("node {}: {:+.3f} s", node_rank, offset));
    }
  }
  if (off.empty()) {
    out.push_back({.name = "clock",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = fmt::format("within {:.1f} ms of the head node", largest * 1000),
                   .fix = {}});
    return;
  }
  out.push_back({.name = "clock",
                 .where = "nodes differ",
                 .verdict = Verdict::warn,
                 .detail = strings::join(off, ", ") + " from the head node",
                 .fix = "run an NTP or PTP client (chrony) on every node: timeouts, logs and "
                        "traces compare times across nodes"});
}

void check_collectives(std::vector<Check>& out, const json& facts, const Thresholds& thresholds) {
  if (has(facts, fact::result::collectives_skipped)) {
    out.push_back({.name = "all-reduce",
                   .where = "the gang",
                   .verdict = Verdict::skipped,
                   .detail = text_of(field(facts, fact::result::collectives_skipped)),
                   .fix = {}});
    return;
  }
  if (has(facts, fact::result::collectives_error)) {
    out.push_back({.name = "all-reduce",
                   .where = "the gang",
                   .verdict = Verdict::fail,
                   .detail = text_of(field(facts, fact::result::collectives_error)),
                   .fix = "the ranks reached the store but not each other: see docs/networking.md "
                          "(the interface each node uses, firewalls between nodes)"});
    return;
  }
  const json& collectives = field(facts, fact::result::collectives);
  if (collectives.empty()) return;
  const json& first = collectives[0];
  double size = value_of(first, fact::collectives::bytes, 0.0);
  if (has(first, fact::collectives::gang)) {
    out.push_back(
        {.name = "all-reduce",
         .where = fmt::format("the gang ({} ranks)", collectives.size()),
         .verdict = Verdict::pass,
         .detail = fmt::format(
             "{} of {}: {:.1f} ms, bus {}",
             value_of(first, fact::collectives::backend, std::string()), bytes_text(size),
             value_of(field(first, fact::collectives::gang), fact::gang::seconds, 0.0) * 1000,
             rate_text(value_of(field(first, fact::collectives::gang), fact::gang::bus_bytes_per_s,
                                0.0))),
         .fix = {}});
  }
  // Node pairs: each pair measured by both of its ranks; the first of the pair reports it.
  std::vector<std::string> listed;
  std::vector<double> rates;
  std::map<int, double> best_of_rank;
  for (const json& answer : collectives) {
    for (const json& pair : field(answer, fact::collectives::pairs)) {
      const json& ranks = field(pair, fact::pair::ranks);
      if (!ranks.is_array() || ranks.size() != 2) continue;
      int a = ranks[0].get<int>();
      int b = ranks[1].get<int>();
      double rate = value_of(pair, fact::pair::bus_bytes_per_s, 0.0);
      best_of_rank[a] = std::max(best_of_rank[a], rate);
      best_of_rank[b] = std::max(best_of_rank[b], rate);
      if (a < 0 || static_cast<std::size_t>(a) >= collectives.size() ||
          &answer != &collectives[static_cast<std::size_t>(a)]) {
        continue;
      }
      rates.push_back(rate);
      listed.push_back(fmt::format(
          "{}-{} {}", value_of(facts_of_rank(facts, a), fact::rank::node_rank, a),
          value_of(facts_of_rank(facts, b), fact::rank::node_rank, b), rate_text(rate)));
    }
  }
  if (rates.empty()) return;
  // A node is judged by its best pair (a slow neighbour drags one pair down,
  // not both) against the median node's best: with three nodes, one slow
  // node still leaves the median a healthy one.
  std::vector<double> bests;
  bests.reserve(best_of_rank.size());
  for (const auto& [rank, best] : best_of_rank) bests.push_back(best);
  std::sort(bests.begin(), bests.end());
  double median = bests[bests.size() / 2];
  std::vector<std::string> slow;
  if (best_of_rank.size() >= 3) {
    for (const auto& [rank, best] : best_of_rank) {
      if (best < thresholds.slow_pair_share * median) {
        slow.push_back(
            fmt::format("{}: {} at best", node_name_of_rank(facts, rank), rate_text(best)));
      }
    }
  }
  Check pairs{.name = "node pairs",
              .where = fmt::format("{} pairs", rates.size()),
              .verdict = Verdict::pass,
              .detail = "bus bandwidth " + strings::join(listed, ", "),
              .fix = {}};
  if (!slow.empty()) {
    pairs.verdict = Verdict::warn;
    pairs.detail = strings::join(slow, "; ") +
                   fmt::format(" (the median node's best {}); ", rate_text(median)) + pairs.detail;
    pairs.fix =
        "that node's network is much slower than its peers': check its link speed, "
        "its interface (docs/networking.md) and what else runs there";
  }
  out.push_back(std::move(pairs));
}

// With the job's secret, every rank's facts are sealed (sealing.hpp), and
// rank 0 lists those whose seal did not check: they were not believed, and
// someone other than the preflight's workers writes to the job's store.
// Without a secret there is no row.
void check_seals(std::vector<Check>& out, const json& facts, const std::vector<Node>& nodes) {
  const json& refused = field(facts, fact::result::refused);
  if (!refused.empty()) {
    std::vector<int> ranks;
    std::vector<std::string> why;
    for (const json& entry : refused) {
      ranks.push_back(value_of(entry, fact::refused::rank, -1));
      why.push_back(value_of(entry, fact::refused::why, std::string("refused")));
    }
    out.push_back(
        {.name = "seals",
         .where = "ranks " + strings::join_numbers(ranks, ", "),
         .verdict = Verdict::fail,
         .detail = "refused what the store held for them: " + strings::join(why, "; "),
         .fix = fmt::format(
             "someone who can reach the store at {} wrote there in this job's place: keep its "
             "port inside the cluster's network, and see who else can reach it "
             "(docs/securing-multi-node.md)",
             value_of(facts, fact::result::store, std::string("?")))});
    return;
  }
  if (value_of(facts, fact::result::sealed, false)) {
    out.push_back({.name = "seals",
                   .where = every(nodes),
                   .verdict = Verdict::pass,
                   .detail = "every fact that came carried the seal of the key derived from "
                             "the job's secret",
                   .fix = {}});
  }
}

}  // namespace

std::vector<Check> judge(const json& facts, const Thresholds& thresholds) {
  std::vector<Check> checks;
  std::vector<Node> nodes = nodes_of(facts);
  check_store(checks, facts, nodes);
  check_seals(checks, facts, nodes);
  check_torch(checks, nodes);
  check_devices(checks, facts, nodes);
  check_space(checks, nodes, "log dir", fact::rank::log_dir, thresholds.log_dir_warn_bytes,
              thresholds.log_dir_fail_bytes,
              "free space there, or write the logs elsewhere with --log-dir");
  check_space(checks, nodes, "/dev/shm", fact::rank::shm, thresholds.shm_warn_bytes, std::nullopt,
              "NCCL and DataLoader workers share memory through /dev/shm: give it more (a "
              "container's --shm-size, or mount -o remount,size=8G /dev/shm)");
  check_limits(checks, nodes, thresholds);
  check_versions(checks, nodes);
  check_variables(checks, nodes);
  check_clock(checks, facts, nodes, thresholds);
  check_collectives(checks, facts, thresholds);
  return checks;
}

}  // namespace gangrun::preflight
