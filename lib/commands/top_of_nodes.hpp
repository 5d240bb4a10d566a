// `gangrun top`'s reading of a running job of several nodes, one frame at a
// time: like `gangrun stacks` (stacks_of_nodes.hpp) it writes an ask sealed
// with the stacks key, which the coordinator numbers; every agent answers
// request n of kind status with its snapshot (observe/node_status.hpp) under
// doctor/node_requests.hpp's node_keys::status, no stack read. One store
// connection serves every frame.
//
// A snapshot is read back as a stranger's text: sealed with the stacks key,
// at most k_max_status_bytes, every string printable and bounded, every
// number in range (status_from_answer); one that is not is that node's "did
// not answer".
#pragma once

#include "commands/top_frame.hpp"
#include "doctor/job_registry.hpp"
#include "rendezvous/signing.hpp"
#include "store/client.hpp"
#include "util/error.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

namespace gangrun::commands {

inline constexpr std::size_t k_max_status_bytes = 1 << 20;

// One node's snapshot from its JSON text, bounded as above; the error says
// which field was out of range.
Expected<observe::NodeStatus> status_from_answer(const std::string& text);

// What a frame's reading found: the view, or the job's end.
struct TopReading {
  std::optional<TopView> view;
  // Set when the job has ended: how ("exit code 0", "exit code 1: rank 3 on node 1 ... failed").
  std::optional<std::string> ended;
};

// How the job ended, as the coordinator publishes it, watched on a thread
// and a store connection of its own, so that top can say it even when the
// agents are gone before its next frame.
class JobEndWatch {
 public:
  explicit JobEndWatch(const doctor::RegisteredJob& job);
  // "exit code 0", ...; nullopt while the job runs (or its end was not seen).
  std::optional<std::string> outcome() const;
  // The outcome once the watch is over (it saw the end, or the store went),
  // waiting for it at most `limit`: the agents may be gone a moment before
  // the watch has read the coordinator's last words.
  std::optional<std::string> outcome_within(std::chrono::milliseconds limit) const;

 private:
  void watch(const std::stop_token& stop, doctor::RegisteredJob job);
  mutable std::mutex mutex_;
  mutable std::condition_variable over_;
  std::optional<std::string> outcome_;
  bool finished_ = false;
  std::jthread thread_;  // last: stopped and joined before the rest goes
};

// A frame's reading: from the store on a job of several nodes (below), from
// the agent's file on a job of one (top_of_one_node.hpp).
class FrameReader {
 public:
  virtual ~FrameReader() = default;
  // One frame; fails with ErrorCode::io while there is none to read yet.
  virtual Expected<TopReading> read(std::chrono::milliseconds limit) = 0;
  // Again, after a reading that failed otherwise.
  virtual Expected<void> reconnect() = 0;
};

class NodeStatusReader final : public FrameReader {
 public:
  static Expected<NodeStatusReader> connect(const doctor::RegisteredJob& job);
  // One frame: the running round's nodes asked and their answers read
  // (those that do not answer within limit are named unanswered). Fails
  // with ErrorCode::io while no round runs (starting, between rounds).
  Expected<TopReading> read(std::chrono::milliseconds limit) override;
  // A new connection to the job's store, after one that failed.
  Expected<void> reconnect() override;

 private:
  NodeStatusReader(doctor::RegisteredJob job, store::Client client)
      : job_(std::move(job)), client_(std::move(client)) {}
  doctor::RegisteredJob job_;
  store::Client client_;
};

}  // namespace gangrun::commands
