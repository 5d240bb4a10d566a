// Every rank's stack, merged: ranks whose main threads stand in the same
// place form one group, and the summary leads with the odd ones out, because
// in a hung gang the many ranks waiting in a collective all look alike and
// the one that is elsewhere is the one to look at:
//
//   rank 2 (node1, pid 4711): load_batch <- train <- <module>
//   ranks 0, 1, 3 (node0, node1): all_reduce <- train_step <- train <- <module>
//
// A rank stopped from outside (SIGSTOP, a debugger) comes before them all:
// it runs none of its code, so the others wait for it wherever it stands.
//
//   rank 1 (node1, pid 4712): stopped (SIGSTOP or another stop signal; state T): all_reduce <- ...
#pragma once

#include "doctor/stacks.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

// What was learned of one rank.
struct RankStacks {
  int rank = 0;
  std::string host;
  long pid = 0;
  std::vector<ThreadStack> threads;        // empty when unavailable
  std::optional<std::string> unavailable;  // why no stack was read ("py-spy not found", ...)
  // 'T' or 't' (proc_stat.hpp: stopped_state) when the rank was stopped as
  // it was read: the likely cause of a hang.
  std::optional<char> stopped;
};

struct StackGroup {
  std::vector<const RankStacks*> members;  // ascending rank
  std::vector<Frame> frames;               // the main thread's, innermost first
  std::optional<std::string> unavailable;  // a group of ranks whose stack could not be read
  std::optional<char> stopped;             // a group of ranks stopped alike (RankStacks::stopped)
};

// Groups ranks by their main thread's frames (function, file and line), and
// ranks whose stack could not be read by the reason; stopped ranks never
// share a group with running ones. Stopped groups first, then smaller
// groups (the odd ones out), then groups by their lowest rank; unreadable
// groups after the readable ones. The groups point into ranks, which must
// outlive them.
std::vector<StackGroup> group_by_stack(const std::vector<RankStacks>& ranks);

// The ranks of ranks that were stopped when they were read, ascending.
std::vector<int> stopped_ranks(const std::vector<RankStacks>& ranks);

// "load_batch <- train <- <module>": at most max_frames function names,
// innermost first, "..." where more were left out; "(no Python frames)" for
// a thread with none.
std::string frames_line(const std::vector<Frame>& frames, std::size_t max_frames = 6);

// One line per group, as in the examples above: a group of one names its
// host and pid, a larger one its hosts; a stopped group says so first.
std::vector<std::string> summary_lines(const std::vector<StackGroup>& groups);

// The whole report for people: the summary, then every rank's threads in full
// (function, file:line), rank by rank.
std::string full_text(const std::vector<RankStacks>& ranks, const std::vector<StackGroup>& groups);

}  // namespace gangrun::doctor
