#include "commands/top_command.hpp"

#include "commands/stacks_command.hpp"
#include "commands/terminal_screen.hpp"
#include "commands/top_frame.hpp"
#include "commands/top_of_nodes.hpp"
#include "commands/top_of_one_node.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>

namespace gangrun::commands {

namespace {

using Clock = std::chrono::steady_clock;

// A frame every second: the answers get most of it.
constexpr std::chrono::milliseconds k_frame_interval{1000};
constexpr std::chrono::milliseconds k_frame_answers_limit{800};
// A frame's reading is tried again this often while no round runs, for so long.
constexpr std::chrono::milliseconds k_between_rounds_retry{200};
constexpr std::chrono::seconds k_between_rounds_limit{30};
// How long the job's gone agent leaves top to read how it ended.
constexpr std::chrono::milliseconds k_last_words_limit{2000};

std::string clock_text() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

bool agent_alive(const doctor::RegisteredJob& job) {
  auto ticks = doctor::process_start_ticks(job.pid);
  return ticks && *ticks == job.start_ticks;
}

std::string gone_text(const doctor::RegisteredJob& job) {
  return fmt::format("the job ended (its gangrun, pid {}, is gone)", job.pid);
}

// The next view, tried again (bounded) while no round runs or the store
// does not answer; `ended` set when the job is over: the coordinator says
// how it ended, or its agent is gone.
Expected<TopReading> next_reading(FrameReader& reader, const doctor::RegisteredJob& job) {
  const Clock::time_point give_up = Clock::now() + k_between_rounds_limit;
  for (;;) {
    auto reading = reader.read(k_frame_answers_limit);
    if (reading) return reading;
    if (!agent_alive(job)) return TopReading{.view = std::nullopt, .ended = gone_text(job)};
    if (Clock::now() > give_up)
      return fail(reading.error().code(), "top: " + reading.error().message());
    std::this_thread::sleep_for(k_between_rounds_retry);
    if (reading.error().code() != ErrorCode::io) (void)reader.reconnect();
  }
}

nlohmann::json view_json(const TopView& view, double read_seconds) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const observe::NodeStatus& node : view.nodes) nodes.push_back(observe::to_json(node));
  return {{"run_id", view.run_id},
          {"nodes", std::move(nodes)},
          {"unanswered", view.unanswered},
          {"read_seconds", read_seconds}};
}

int print_end(const std::string& ended) {
  std::fputs(("gangrun top: " + ended + "\n").c_str(), stdout);
  return 0;
}

FrameSize size_for_print() {
  if (auto size = terminal_size()) {
    return {.width = size->columns, .height = size->rows, .interactive = false};
  }
  return {.width = 80, .height = 0, .interactive = false};
}

// One reading at a time, so that q is read between them: while no round
// runs (or the store does not answer) the last frame stays, with a line
// that says why, for at most k_between_rounds_limit.
Expected<int> live(FrameReader& reader, const doctor::RegisteredJob& job) {
  std::optional<std::string> ended;
  // A job of one node has no store to watch: its end is its agent's.
  std::optional<JobEndWatch> end_watch;
  if (job.nodes) end_watch.emplace(job);
  {
    TerminalScreen screen;
    std::optional<TopView> before;
    std::optional<Clock::time_point> failing_since;
    for (;;) {
      const Clock::time_point next_frame = Clock::now() + k_frame_interval;
      auto reading = reader.read(k_frame_answers_limit);
      if (!reading && !agent_alive(job))
        reading = TopReading{.view = std::nullopt, .ended = gone_text(job)};
      ScreenSize size = terminal_size().value_or(ScreenSize{});
      const FrameSize frame{.width = size.columns, .height = size.rows};
      if (!reading) {
        if (!failing_since) failing_since = Clock::now();
        if (Clock::now() - *failing_since > k_between_rounds_limit) {
          return fail(reading.error().code(), "top: " + reading.error().message());
        }
        if (reading.error().code() != ErrorCode::io) (void)reader.reconnect();
        std::vector<std::string> lines = before ? frame_lines(*before, nullptr, frame, clock_text())
                                                : std::vector<std::string>{};
        lines.insert(lines.begin(), std::string("waiting: ") + reading.error().message());
        if (frame.height > 0 && static_cast<int>(lines.size()) > frame.height) {
          lines.resize(static_cast<std::size_t>(frame.height));
        }
        for (std::string& line : lines)
          line = line.substr(0, static_cast<std::size_t>(frame.width));
        screen.draw(joined(lines));
      } else if (reading->ended) {
        // The coordinator's words, when its watch saw them, say more than "gone".
        ended = end_watch ? end_watch->outcome_within(k_last_words_limit).value_or(*reading->ended)
                          : *reading->ended;
        break;
      } else {
        failing_since.reset();
        screen.draw(
            joined(frame_lines(*reading->view, before ? &*before : nullptr, frame, clock_text())));
        before = std::move(reading->view);
      }
      TerminalScreen::Event event = screen.wait_until(next_frame);
      if (event == TerminalScreen::Event::quit) break;
      if (auto outcome = end_watch ? end_watch->outcome() : std::nullopt) {
        ended = std::move(outcome);
        break;
      }
    }
  }
  if (ended) return print_end(*ended);
  return 0;
}

}  // namespace

Expected<int> run_top_command(const config::TopRequest& request, const EnvMap& env) {
  GANGRUN_TRY_ASSIGN(job, choose_job(doctor::running_jobs(env), request.job, "top"));
  // One path each: a job of several nodes answers through its store, every
  // node alike; a job of one node, which has none for top, through its
  // agent's file (top_of_one_node.hpp).
  std::unique_ptr<FrameReader> reader;
  if (job->nodes) {
    GANGRUN_TRY_ASSIGN(connected, NodeStatusReader::connect(*job));
    reader = std::make_unique<NodeStatusReader>(std::move(*connected));
  } else {
    GANGRUN_TRY_ASSIGN(dir, doctor::registry_dir(env));
    reader = std::make_unique<OneNodeStatusReader>(*job, doctor::entry_files(*dir, job->pid));
  }
  if (request.json) {
    const Clock::time_point asked = Clock::now();
    GANGRUN_TRY_ASSIGN(reading, next_reading(*reader, *job));
    if (reading->ended) return print_end(*reading->ended);
    double seconds = std::chrono::duration<double>(Clock::now() - asked).count();
    std::fputs((view_json(*reading->view, seconds).dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  if (request.once) {
    // Two readings a second apart, so that CPU% is a rate.
    GANGRUN_TRY_ASSIGN(first, next_reading(*reader, *job));
    if (first->ended) return print_end(*first->ended);
    std::this_thread::sleep_for(k_frame_interval);
    GANGRUN_TRY_ASSIGN(second, next_reading(*reader, *job));
    if (second->ended) return print_end(*second->ended);
    std::fputs(
        joined(frame_lines(*second->view, &*first->view, size_for_print(), clock_text())).c_str(),
        stdout);
    return 0;
  }
  return live(*reader, *job);
}

}  // namespace gangrun::commands
