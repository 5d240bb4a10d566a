#include "report/timeline_svg.hpp"

#include "report/html_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gangrun::report {
namespace {

constexpr double k_label_width = 300;
constexpr double k_plot_width = 880;
constexpr double k_width = k_label_width + k_plot_width + 20;
constexpr double k_axis_height = 34;
constexpr double k_node_height = 22;
constexpr double k_lane_height = 15;
constexpr double k_bar_height = 10;

struct Scale {
  double span_s;
  double x(double seconds) const { return k_label_width + seconds / span_s * k_plot_width; }
  double width(double from_s, double to_s) const {
    return std::max(1.5, (to_s - from_s) / span_s * k_plot_width);
  }
};

// A round step for about eight ticks: 1, 2 or 5 times a power of ten.
double tick_step(double span_s) {
  double raw = span_s / 8;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

std::string seconds_text(double seconds) {
  return seconds < 10 ? fmt::format("{:.2f} s", seconds) : fmt::format("{:.1f} s", seconds);
}

std::string kib_text(long long bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
}

void axis(const Scale& scale, double height, std::string& out) {
  double step = tick_step(scale.span_s);
  out += "<g class=\"axis\">";
  for (double at = 0; at <= scale.span_s + step / 1000; at += step) {
    double x = scale.x(at);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/><text x=\"{0:.1f}\" "
        "y=\"{3}\">{4}</text>",
        x, k_axis_height - 6, height, k_axis_height - 10, seconds_text(at));
  }
  out += "</g>";
}

void bands(const Timeline& timeline, const Scale& scale, double height, std::string& out) {
  for (const Band& band : timeline.bands) {
    bool hang = band.kind == Band::Kind::hang;
    out += fmt::format(
        "<rect class=\"band {}\" data-attempt=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"{:.1f}\"><title>{}</title></rect>",
        hang ? "hang" : "failure-window", band.attempt, scale.x(band.start_s), k_axis_height,
        scale.width(band.start_s, band.end_s), height - k_axis_height, html_escape(band.title));
    if (hang) {
      out += fmt::format("<text class=\"band-label\" x=\"{:.1f}\" y=\"{}\">hang</text>",
                         scale.x(band.start_s) + 3, k_axis_height + 10);
    }
  }
  for (double start : timeline.attempt_starts_s) {
    out += fmt::format(
        "<line class=\"restart\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>",
        scale.x(start), k_axis_height, height);
  }
}

std::string run_title(const Lane& lane, const RankRun& run) {
  std::string title = fmt::format("rank {}, attempt {}, pid {}", lane.rank, run.attempt, run.pid);
  if (!run.drawn) {
    title += ": its times are in its own node's report";
  } else {
    title += fmt::format(": {} ({} to {})", run.ended.empty() ? run.exit_text : run.ended,
                         seconds_text(run.start_s), seconds_text(run.end_s));
  }
  if (run.root_cause) title += "\nthe root cause";
  if (run.hung) title += "\nhung: elsewhere than the others when the hang was read";
  if (run.stopped) title += "\nstopped from outside (SIGSTOP or a debugger)";
  if (run.straggler) title += "\nnamed a straggler";
  if (!run.straggler_text.empty()) title += "\n" + run.straggler_text;
  if (run.last_output_s) {
    title += fmt::format("\nlast output at {} ({} in its logs)", seconds_text(*run.last_output_s),
                         kib_text(run.output_bytes));
  }
  if (!run.stack_line.empty()) title += "\nstack: " + run.stack_line;
  return html_escape(title);
}

std::string run_classes(const RankRun& run) {
  std::string classes = "run " + run.outcome;
  if (run.root_cause) classes += " root-cause";
  if (run.hung) classes += " hung";
  if (run.stopped) classes += " stopped-out";
  if (run.straggler) classes += " straggler";
  return classes;
}

// "rank 2  exit 1  root cause  hung": the lane's label, its last drawn run's end.
void lane_label(const Lane& lane, double y, std::string& out) {
  const RankRun* last = nullptr;
  for (const RankRun& run : lane.runs) {
    if (run.drawn) last = &run;
  }
  out += fmt::format("<text class=\"rank-label\" x=\"8\" y=\"{:.1f}\">rank {}", y, lane.rank);
  if (last)
    out += fmt::format("<tspan class=\"exit\" dx=\"8\">{}</tspan>", html_escape(last->exit_text));
  if (!last) out += "<tspan class=\"mark\" dx=\"8\">stack only</tspan>";
  if (lane.any(&RankRun::root_cause))
    out += "<tspan class=\"mark root-cause\" dx=\"8\">root cause</tspan>";
  if (lane.any(&RankRun::hung)) out += "<tspan class=\"mark hung\" dx=\"8\">hung</tspan>";
  if (lane.any(&RankRun::stopped))
    out += "<tspan class=\"mark stopped-out\" dx=\"8\">stopped</tspan>";
  if (lane.any(&RankRun::straggler)) out += "<tspan class=\"mark straggler\" dx=\"8\">slow</tspan>";
  out += "</text>";
}

void lane(const Lane& lane, const Scale& scale, double top, std::string& out) {
  auto flag = [&](const char* name, bool RankRun::*mark) {
    return lane.any(mark) ? fmt::format(" data-{}=\"true\"", name) : std::string();
  };
  out += fmt::format("<g class=\"lane\" data-rank=\"{}\" data-node=\"{}\"{}{}{}{}>", lane.rank,
                     html_escape(lane.node), flag("root-cause", &RankRun::root_cause),
                     flag("hung", &RankRun::hung), flag("stopped", &RankRun::stopped),
                     flag("straggler", &RankRun::straggler));
  double bar_top = top + (k_lane_height - k_bar_height) / 2;
  lane_label(lane, bar_top + k_bar_height - 1, out);
  for (const RankRun& run : lane.runs) {
    if (!run.drawn) {
      out += fmt::format(
          "<text class=\"elsewhere\" x=\"{:.1f}\" y=\"{:.1f}\">{}<title>{}</title></text>",
          k_label_width + 4, bar_top + k_bar_height - 1, html_escape(run.stack_line),
          run_title(lane, run));
      continue;
    }
    out += fmt::format(
        "<rect class=\"{}\" data-attempt=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
        "height=\"{}\" rx=\"2\"><title>{}</title></rect>",
        run_classes(run), run.attempt, scale.x(run.start_s), bar_top,
        scale.width(run.start_s, run.end_s), k_bar_height, run_title(lane, run));
    if (run.last_output_s) {
      double x = scale.x(*run.last_output_s);
      out += fmt::format(
          "<line class=\"last-output\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
          "y2=\"{2:.1f}\"/>",
          x, bar_top - 1, bar_top + k_bar_height + 1);
    }
  }
  out += "</g>";
}

}  // namespace

std::string timeline_svg(const Timeline& timeline) {
  double height = k_axis_height + 4 + static_cast<double>(timeline.nodes.size()) * k_node_height +
                  static_cast<double>(timeline.lanes.size()) * k_lane_height;
  Scale scale{timeline.span_s};
  std::string out;
  out.reserve(600 + timeline.lanes.size() * 700);
  out += fmt::format(
      "<svg class=\"timeline\" width=\"{0}\" "
      "height=\"{1:.0f}\" viewBox=\"0 0 {0} {1:.0f}\" role=\"img\" aria-label=\"timeline of "
      "every rank\">",
      k_width, height);
  axis(scale, height, out);
  bands(timeline, scale, height, out);
  double y = k_axis_height + 4;
  for (const std::string& node : timeline.nodes) {
    out += fmt::format("<g class=\"node\" data-node=\"{}\">", html_escape(node));
    out += fmt::format("<text class=\"node-label\" x=\"4\" y=\"{:.1f}\">{}</text>", y + 15,
                       html_escape(node));
    y += k_node_height;
    for (const Lane& each : timeline.lanes) {
      if (each.node != node) continue;
      lane(each, scale, y, out);
      y += k_lane_height;
    }
    out += "</g>";
  }
  out += "</svg>";
  return out;
}

}  // namespace gangrun::report
