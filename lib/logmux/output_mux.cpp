#include "logmux/output_mux.hpp"

#include "logmux/log_file.hpp"
#include "logmux/pipe_stream.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace gangrun::logmux {

struct OutputMux::Impl {
  boost::asio::io_context& io;
  Console& console;
  // Every stream whose on_closed has not run yet, open or not: the
  // destructor must silence those that finished but wait for their posted
  // callback.
  std::vector<std::shared_ptr<PipeStream>> streams;
  // Log files of retired streams that lost bytes.
  std::vector<std::string> incomplete_logs;

  void retire(const PipeStream* stream) {
    std::erase_if(streams, [stream](const auto& kept) { return kept.get() == stream; });
  }
};

OutputMux::OutputMux(boost::asio::io_context& io, Console& console)
    : impl_(std::make_unique<Impl>(Impl{io, console, {}, {}})) {}

OutputMux::~OutputMux() {
  for (const auto& stream : impl_->streams) stream->abandon();
}

Expected<void> OutputMux::add_stream(UniqueFd read_end, StreamRoute route, TailBuffer* tail,
                                     std::function<void()> on_closed, int quiet_ms) {
  LogFile file;
  if (route.file_path) {
    GANGRUN_TRY_ASSIGN(opened, LogFile::open(*route.file_path));
    file = std::move(*opened);
  }
  Impl* impl = impl_.get();
  auto stream = std::make_shared<PipeStream>(impl->io, impl->console, std::move(route), tail,
                                             std::move(file), std::chrono::milliseconds(quiet_ms));
  // Retire first: on_closed may destroy this mux, and the stream stays alive
  // meanwhile through whoever called deliver_closed().
  stream->set_on_closed([impl, raw = stream.get(), user = std::move(on_closed)] {
    if (raw->log_file().incomplete()) impl->incomplete_logs.push_back(raw->log_file().path());
    impl->retire(raw);
    if (user) user();
  });
  if (Expected<void> started = stream->start(std::move(read_end)); !started) return started;
  impl->streams.push_back(std::move(stream));
  return {};
}

std::size_t OutputMux::open_streams() const {
  return static_cast<std::size_t>(
      std::count_if(impl_->streams.begin(), impl_->streams.end(),
                    [](const auto& stream) { return !stream->finished(); }));
}

std::vector<std::string> OutputMux::incomplete_logs() const {
  std::vector<std::string> paths = impl_->incomplete_logs;
  for (const auto& stream : impl_->streams) {
    if (stream->log_file().incomplete()) paths.push_back(stream->log_file().path());
  }
  return paths;
}

void OutputMux::close_all() {
  // A copy, because each callback retires its stream from the list. Streams
  // that already reached EOF get their posted callback early (it runs once).
  std::vector<std::shared_ptr<PipeStream>> closing = impl_->streams;
  // All output first, then the callbacks, which must not find a half-closed
  // mux. A callback may destroy the mux; the streams left then are
  // abandoned, and deliver_closed() on them does nothing, so this loop never
  // touches the mux itself.
  for (const auto& stream : closing) stream->close_now();
  for (const auto& stream : closing) stream->deliver_closed();
}

}  // namespace gangrun::logmux
