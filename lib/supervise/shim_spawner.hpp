// The real Spawner: every worker under its own shim (supervise/shim.hpp),
// created by spawn() (supervise/process.hpp), its reports read and its
// exit seen on the given io_context.
#pragma once

#include "supervise/spawner.hpp"

#include <boost/asio/io_context.hpp>

namespace gangrun::supervise {

class ShimSpawner final : public Spawner {
 public:
  explicit ShimSpawner(boost::asio::io_context& io) : io_(io) {}

  Expected<std::shared_ptr<WorkerProcess>> start(const SpawnSpec& spec,
                                                 WorkerEvents events) override;
  void reap_strays(const std::set<pid_t>& keep) override;
  int kill_strays() override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace gangrun::supervise
