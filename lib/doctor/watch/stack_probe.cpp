#include "doctor/watch/stack_probe.hpp"

#include "doctor/stack_tool.hpp"
#include "util/fd.hpp"

#include <boost/asio/post.hpp>

#include <sys/mman.h>
#include <unistd.h>

namespace gangrun::doctor {
namespace asio = boost::asio;

namespace {

// Everything written to a memory file from its start.
std::string read_all(int fd) {
  std::string text;
  char buffer[16384];
  off_t offset = 0;
  for (;;) {
    ssize_t got = ::pread(fd, buffer, sizeof buffer, offset);
    if (got <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(got));
    offset += got;
  }
}

}  // namespace

// One tool reading one rank. Its output goes to a memory file rather than a
// pipe: nothing has to be read while it runs, and what it wrote is there
// once it has ended.
struct StackProbe::Reading {
  UniqueFd output;
  std::shared_ptr<supervise::WorkerProcess> tool;
  bool exited = false;
  bool gone = false;
};

StackProbe::StackProbe(asio::io_context& io, supervise::Spawner& spawner)
    : io_(io), spawner_(spawner), deadline_(io) {}

StackProbe::~StackProbe() = default;

void StackProbe::start(const std::optional<std::string>& tool, const std::string& host,
                       const std::vector<StackTarget>& targets, const EnvMap& env,
                       std::chrono::milliseconds limit, DoneHandler done, bool nonblocking) {
  done_ = std::move(done);
  ranks_.clear();
  readings_.clear();
  for (const StackTarget& target : targets) {
    ranks_.push_back(doctor::rank_to_read(target.rank, host, target.pid));
  }
  if (!tool) {
    for (doctor::RankStacks& rank : ranks_) {
      rank.unavailable = doctor::without_stack("py-spy not found", rank.pid);
    }
    asio::post(io_, [this] { finish(); });
    return;
  }
  left_ = ranks_.size();
  for (std::size_t i = 0; i < ranks_.size(); ++i) readings_.push_back(std::make_unique<Reading>());
  deadline_.expires_after(limit);
  deadline_.async_wait([this, limit](const boost::system::error_code& error) {
    if (error) return;
    for (std::size_t i = 0; i < readings_.size(); ++i) {
      Reading& reading = *readings_[i];
      if (!reading.tool || reading.gone) continue;
      if (!reading.exited) {
        ranks_[i].unavailable = doctor::without_stack(
            "the stack tool did not finish within " + std::to_string(limit.count()) + " ms",
            ranks_[i].pid);
      }
      reading.tool->end_tree();
    }
  });
  for (std::size_t i = 0; i < ranks_.size(); ++i) read_one(i, *tool, env, nonblocking);
  if (left_ == 0) {
    deadline_.cancel();
    asio::post(io_, [this] { finish(); });
  }
}

void StackProbe::read_one(std::size_t index, const std::string& tool, const EnvMap& env,
                          bool nonblocking) {
  Reading& reading = *readings_[index];
  doctor::RankStacks& rank = ranks_[index];
  reading.output = UniqueFd(::memfd_create("gangrun-stack", MFD_CLOEXEC));
  if (!reading.output.valid()) {
    rank.unavailable =
        doctor::without_stack("no memory file for the stack tool's output", rank.pid);
    --left_;
    return;
  }
  std::vector<std::string> argv = doctor::dump_command_for(tool, rank, false, nonblocking);
  supervise::SpawnSpec spec{.executable = tool,
                            .argv = std::move(argv),
                            .env = env,
                            .stdin_fd = -1,
                            .stdout_fd = reading.output.get(),
                            .stderr_fd = reading.output.get(),
                            .cpus = {}};
  supervise::WorkerEvents events{
      .on_running = [](pid_t) {},
      .on_start_failed =
          [this, index](const Error& error) {
            ranks_[index].unavailable = "the stack tool could not start: " + error.message();
            readings_[index]->tool->end_tree();
          },
      .on_exited =
          [this, index](supervise::ExitStatus, long) {
            readings_[index]->exited = true;
            readings_[index]->tool->end_tree();
          },
      .on_supervisor_gone = [this, index](supervise::ExitStatus, long) { on_tool_gone(index); },
  };
  auto started = spawner_.start(spec, std::move(events));
  if (!started) {
    rank.unavailable = "the stack tool could not start: " + started.error().message();
    --left_;
    return;
  }
  reading.tool = std::move(*started);
}

void StackProbe::on_tool_gone(std::size_t index) {
  Reading& reading = *readings_[index];
  doctor::RankStacks& rank = ranks_[index];
  reading.gone = true;
  if (reading.exited && !rank.unavailable) {
    auto threads = doctor::threads_from_dump(read_all(reading.output.get()));
    if (threads) {
      rank.threads = std::move(*threads);
    } else {
      rank.unavailable = doctor::without_stack(threads.error().message(), rank.pid);
    }
  } else if (!rank.unavailable) {
    rank.unavailable = doctor::without_stack("the stack tool was ended", rank.pid);
  }
  if (--left_ > 0) return;
  deadline_.cancel();
  // The events came from the tools' handlers; they are let go of after them.
  asio::post(io_, [this] { finish(); });
}

void StackProbe::finish() {
  readings_.clear();
  DoneHandler done = std::move(done_);
  done_ = nullptr;
  std::vector<doctor::RankStacks> ranks = std::move(ranks_);
  ranks_.clear();
  done(std::move(ranks));
}

std::set<pid_t> StackProbe::supervisor_pids() const {
  std::set<pid_t> pids;
  for (const auto& reading : readings_) {
    if (reading->tool && !reading->gone) pids.insert(reading->tool->supervisor_pid());
  }
  return pids;
}

}  // namespace gangrun::doctor
