#include "logmux/tail_buffer.hpp"

namespace gangrun::logmux {

namespace {

std::string_view strip_terminator(std::string_view line) {
  if (line.ends_with("\r\n")) return line.substr(0, line.size() - 2);
  if (line.ends_with('\n') || line.ends_with('\r')) return line.substr(0, line.size() - 1);
  return line;
}

// The report may go out as JSON, which rejects a UTF-8 sequence cut in half,
// so a cut backs off over continuation bytes (10xxxxxx) to a character start.
std::string_view cut_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  for (int backed = 0; end > 0 && backed < 3; ++backed) {
    auto byte = static_cast<unsigned char>(text[end]);
    if ((byte & 0xC0U) != 0x80U) break;
    --end;
  }
  return text.substr(0, end);
}

}  // namespace

TailBuffer::TailBuffer(std::size_t max_lines, std::size_t max_line_bytes)
    : max_lines_(max_lines), max_line_bytes_(max_line_bytes) {}

void TailBuffer::push(std::string_view line, bool is_progress) {
  const auto now = std::chrono::steady_clock::now();
  if (is_progress) last_line_at_ = now;
  std::string_view text = strip_terminator(line);
  step_rate_.see(text, now);
  if (max_lines_ == 0) return;
  std::string_view kept = cut_utf8(text, max_line_bytes_);
  // Every worker line passes through here; recycling the oldest string keeps
  // the steady state free of allocations.
  std::string slot;
  if (lines_.size() >= max_lines_) {
    slot = std::move(lines_.front());
    lines_.pop_front();
  }
  slot.assign(kept);
  lines_.push_back(std::move(slot));
}

std::vector<std::string> TailBuffer::lines() const { return {lines_.begin(), lines_.end()}; }

}  // namespace gangrun::logmux
