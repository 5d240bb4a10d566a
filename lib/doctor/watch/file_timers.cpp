#include "doctor/watch/file_timers.hpp"

#include "util/strings.hpp"

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <set>

namespace gangrun::doctor {

namespace {

// The request's signal (0 when it has none), or nullopt when it is not a
// whole number from 0 to SIGRTMAX. Read wide, so that a large number is
// not narrowed into a real signal: 265 as an unsigned char was 9, SIGKILL.
std::optional<int> signal_of(const nlohmann::json& request) {
  auto found = request.find("signal");
  if (found == request.end()) return 0;
  if (found->is_number_unsigned()) {
    auto number = found->get<std::uint64_t>();
    if (number <= static_cast<std::uint64_t>(SIGRTMAX)) return static_cast<int>(number);
  } else if (found->is_number_integer()) {
    auto number = found->get<std::int64_t>();
    if (number >= 0 && number <= SIGRTMAX) return static_cast<int>(number);
  }
  return std::nullopt;
}

double wall_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Expected<std::unique_ptr<FileTimers>> FileTimers::open(boost::asio::io_context& io,
                                                       const std::string& path,
                                                       ExpiredHandler on_expired) {
  if (::mkfifo(path.c_str(), 0600) != 0) {
    return fail(ErrorCode::io, "cannot make the named pipe of the file timers " + path + ": " +
                                   std::strerror(errno) +
                                   " (TORCHELASTIC_TIMER_FILE must name a path that does not "
                                   "exist yet)");
  }
  UniqueFd reader(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  UniqueFd writer(reader.valid() ? ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1);
  if (!reader.valid() || !writer.valid()) {
    int error = errno;
    ::unlink(path.c_str());
    return fail(ErrorCode::io, "cannot open the named pipe of the file timers " + path + ": " +
                                   std::strerror(error));
  }
  std::unique_ptr<FileTimers> timers(
      new FileTimers(io, path, std::move(reader), std::move(writer), std::move(on_expired)));
  timers->read_more();
  return timers;
}

FileTimers::FileTimers(boost::asio::io_context& io, std::string path, UniqueFd reader,
                       UniqueFd writer, ExpiredHandler on_expired)
    : path_(std::move(path)),
      reader_(io, reader.release()),
      keep_open_(std::move(writer)),
      expiry_(io),
      on_expired_(std::move(on_expired)) {}

FileTimers::~FileTimers() {
  boost::system::error_code ignored;
  reader_.close(ignored);
  ::unlink(path_.c_str());
}

std::optional<std::chrono::steady_clock::time_point> FileTimers::last_request_from(
    pid_t pid) const {
  auto found = last_request_.find(pid);
  if (found == last_request_.end()) return std::nullopt;
  return found->second;
}

void FileTimers::clear() {
  timers_.clear();
  last_request_.clear();
  expiry_.cancel();
}

void FileTimers::read_more() {
  reader_.async_read_some(boost::asio::buffer(buffer_),
                          [this](const boost::system::error_code& error, std::size_t got) {
                            if (error) return;  // closed: the agent is ending
                            take_bytes(std::string_view(buffer_.data(), got));
                            check_expiry();
                            read_more();
                          });
}

void FileTimers::take_bytes(std::string_view bytes) {
  // Each byte is looked at once: only the bytes just read are searched for
  // the end of a line, and a line's bytes are kept until it ends, up to
  // k_max_line_bytes. A longer one (no client of torch's writes one: its
  // requests are a few hundred bytes) is dropped whole, and reading starts
  // again after its newline.
  while (!bytes.empty()) {
    std::size_t end = bytes.find('\n');
    std::string_view piece = bytes.substr(0, end);
    if (!dropping_line_ && pending_.size() + piece.size() > k_max_line_bytes) {
      dropping_line_ = true;
      pending_.clear();
      ++dropped_lines_;
      warn_once_in_a_while("a line longer than " + std::to_string(k_max_line_bytes) +
                           " bytes is dropped (FileTimerClient writes one short JSON line per "
                           "request)");
    }
    if (!dropping_line_) pending_.append(piece);
    if (end == std::string_view::npos) return;
    if (!dropping_line_) take_line(pending_);
    pending_.clear();
    dropping_line_ = false;
    bytes.remove_prefix(end + 1);
  }
}

void FileTimers::warn_once_in_a_while(const std::string& what) {
  // A broken client may write the same bad request in a loop: one warning
  // a minute says so, and the rest go to the debug log.
  constexpr auto k_quiet = std::chrono::minutes(1);
  auto now = std::chrono::steady_clock::now();
  if (last_warning_ && now - *last_warning_ < k_quiet) {
    spdlog::debug("file timers ({}): {}", path_, what);
    return;
  }
  last_warning_ = now;
  spdlog::warn("file timers ({}): {}", path_, what);
}

void FileTimers::take_line(const std::string& line) {
  auto request = nlohmann::json::parse(line, nullptr, false);
  try {
    if (request.is_discarded()) throw std::invalid_argument("not JSON");
    auto pid = request.at("pid").get<pid_t>();
    auto scope = request.at("scope_id").get<std::string>();
    auto expiration = request.at("expiration_time").get<double>();
    std::optional<int> signal = signal_of(request);
    last_request_[pid] = std::chrono::steady_clock::now();
    if (expiration < 0) {
      timers_.erase({pid, scope});
    } else if (!signal) {
      ++refused_requests_;
      warn_once_in_a_while("pid " + std::to_string(pid) + " asked for a timer " +
                           strings::quoted(strings::printable(scope)) + " with signal " +
                           strings::printable(request.at("signal").dump()) +
                           ", which is not a signal (0, not killed, or 1.." +
                           std::to_string(SIGRTMAX) + "); the request is ignored");
    } else {
      timers_[{pid, scope}] = {expiration, *signal};
    }
  } catch (const std::exception& error) {
    spdlog::debug("file timers: ignoring a request that does not read ({}): {}", error.what(),
                  strings::printable(line));
  }
}

void FileTimers::check_expiry() {
  const double now = wall_seconds_now();
  std::set<pid_t> reported;
  std::optional<double> next;
  for (auto it = timers_.begin(); it != timers_.end();) {
    const auto& [key, timer] = *it;
    const auto& [expiration, signal] = timer;
    if (expiration > now) {
      if (!next || expiration < *next) next = expiration;
      ++it;
      continue;
    }
    Expired expired{
        .pid = key.first, .scope_id = key.second, .signal = signal, .late_s = now - expiration};
    it = timers_.erase(it);
    if (reported.insert(expired.pid).second) {
      // The handler may signal the worker; it runs after this walk.
      boost::asio::post(reader_.get_executor(), [this, expired] { on_expired_(expired); });
    }
  }
  // A worker reported once: its other timers go with it.
  for (auto it = timers_.begin(); it != timers_.end();) {
    it = reported.contains(it->first.first) ? timers_.erase(it) : std::next(it);
  }
  expiry_.cancel();
  if (!next) return;
  expiry_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(*next - now)));
  expiry_.async_wait([this](const boost::system::error_code& error) {
    if (!error) check_expiry();
  });
}

}  // namespace gangrun::doctor
