// Which rank the others were waiting for when a gang failed. A collective
// that times out, or loses a peer's connection, fails on every rank that
// reached it; the first of them to exit is a victim, not the cause. The
// cause is the rank that never came: it is still running when the others
// have failed (stuck before the collective), or it left first (exited
// before anyone failed). gangrun sees neither the collective nor the
// worker's error, only who ended how and when, so it names a rank only when
// that evidence is plain: at least two ranks failed on their own, and the
// ranks they waited for are fewer than they are.
//
// One owner for this judgement: the gang supervisor asks it about one node,
// the rendezvous' coordinator about every node of a round.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::report {

// How one rank of a gang stood when the judgement was made.
struct RankFate {
  enum class State {
    running,    // not ended by itself (still running, or stopped by gangrun)
    failed,     // ended on its own with a failure
    succeeded,  // exited 0
  };
  int rank = 0;
  State state = State::running;
  std::chrono::system_clock::time_point ended_at;  // failed or succeeded
};

struct Blame {
  std::vector<int> waited_for;  // the ranks the others waited for, ascending
  std::vector<int> waiting;     // the ranks that failed, ascending
  bool never_exited = true;     // false: the waited-for ranks exited first
};

// The ranks the failed ones were waiting for, or nullopt when the evidence
// does not single any out (fewer than two failures, or as many ranks still
// running as failed, or nothing running and no rank that left first).
std::optional<Blame> find_waited_for(const std::vector<RankFate>& fates);

// "rank 2 never reached the collective; ranks 0, 1, 3 timed out waiting",
// "rank 2 exited first (with code 0); ranks 0, 1, 3 failed after it".
// where_ranks_run, when not empty, follows the first waited-for rank:
// "rank 2 on node 1 (node2, 10.0.0.2) never reached ..." (node_name.hpp).
std::string describe(const Blame& blame, const std::string& where_ranks_run = "");

// "rank 4", "ranks 0, 1, 3", "ranks 0-5, 7": runs of three or more as ranges.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace gangrun::report
