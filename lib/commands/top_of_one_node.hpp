// `gangrun top`'s reading of a running job of one node, which has no store
// request for its agent to answer: at every frame top touches the agent's
// wanted file, and the agent, while it is fresh, writes its snapshot to the
// status file beside its registry entry every second
// (doctor/job_registry.hpp: EntryFiles). The file is read as the store's
// answers are, a stranger's text: at most k_max_status_bytes, checked by
// status_from_answer.
#pragma once

#include "commands/top_of_nodes.hpp"
#include "doctor/job_registry.hpp"

#include <sys/stat.h>

#include <optional>

namespace gangrun::commands {

class OneNodeStatusReader final : public FrameReader {
 public:
  OneNodeStatusReader(doctor::RegisteredJob job, doctor::EntryFiles files)
      : job_(std::move(job)), files_(std::move(files)) {}
  // The snapshot the agent wrote since the last reading, waiting for it at
  // most `limit` (the first: at least long enough for the agent to notice
  // it is wanted); then the latest, when it was written since top began.
  Expected<TopReading> read(std::chrono::milliseconds limit) override;
  Expected<void> reconnect() override { return {}; }

 private:
  doctor::RegisteredJob job_;
  doctor::EntryFiles files_;
  std::optional<timespec> first_wanted_;  // when top first asked
  std::optional<timespec> last_read_;     // the mtime of the snapshot read last
};

// The snapshot file's text, if it is a regular file of at most `max_bytes`;
// its mtime in `written`.
Expected<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes,
                                        timespec& written);

}  // namespace gangrun::commands
