#include "launch/files.hpp"

#include "launch/plan.hpp"
#include "util/fd.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace gangrun::launch {
namespace fs = std::filesystem;

Expected<RunDirectory> RunDirectory::create(const std::optional<std::string>& log_dir,
                                            const std::string& tmp_root,
                                            const std::string& run_id) {
  if (log_dir) {
    std::error_code error;
    fs::create_directories(*log_dir, error);
    if (error) {
      return fail(ErrorCode::io, "--log_dir: cannot create " + *log_dir + ": " + error.message());
    }
    return RunDirectory(*log_dir, false);
  }
  std::string pattern = tmp_root + "/gangrun-" + run_id + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    return fail(ErrorCode::io,
                "cannot create a directory in " + tmp_root + ": " + errno_text(errno));
  }
  return RunDirectory(buffer.data(), true);
}

RunDirectory::RunDirectory(RunDirectory&& other) noexcept
    : path_(std::move(other.path_)), temporary_(other.temporary_) {
  other.temporary_ = false;
}

RunDirectory::~RunDirectory() {
  if (!temporary_) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

Expected<void> RunDirectory::prepare_attempt(int attempt, int local_world_size) const {
  std::error_code error;
  fs::path attempt_dir = fs::path(worker_dir(path_, attempt, 0)).parent_path();
  fs::remove_all(attempt_dir, error);
  for (int local_rank = 0; local_rank < local_world_size && !error; ++local_rank) {
    fs::create_directories(worker_dir(path_, attempt, local_rank), error);
  }
  if (error) {
    return fail(ErrorCode::io, "cannot prepare " + attempt_dir.string() + ": " + error.message());
  }
  return {};
}

namespace {

struct AddressList {
  addrinfo* first = nullptr;
  AddressList(const AddressList&) = delete;
  AddressList& operator=(const AddressList&) = delete;
  AddressList() = default;
  ~AddressList() {
    if (first != nullptr) ::freeaddrinfo(first);
  }
};

Expected<void> resolve(const std::string& host, int port, AddressList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &out.first);
  if (status != 0) {
    return fail(ErrorCode::store,
                "cannot resolve --master_addr " + host + ": " + gai_strerror(status));
  }
  return {};
}

int bound_port(int socket_fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(socket_fd, reinterpret_cast<sockaddr*>(&bound), &length);
  return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

Expected<int> pick_free_port(const std::string& host) {
  AddressList addresses;
  if (auto resolved = resolve(host, 0, addresses); !resolved)
    return tl::unexpected(resolved.error());
  std::string last_error = "no address";
  for (addrinfo* entry = addresses.first; entry != nullptr; entry = entry->ai_next) {
    UniqueFd socket_fd(::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, 0));
    if (!socket_fd.valid()) continue;
    if (::bind(socket_fd.get(), entry->ai_addr, entry->ai_addrlen) != 0) {
      last_error = errno_text(errno);
      continue;
    }
    return bound_port(socket_fd.get());
  }
  return fail(ErrorCode::store, "cannot bind a port on " + host + ": " + last_error);
}

Expected<void> check_port_free(const std::string& host, int port) {
  AddressList addresses;
  if (auto resolved = resolve(host, port, addresses); !resolved) {
    return tl::unexpected(resolved.error());
  }
  for (addrinfo* entry = addresses.first; entry != nullptr; entry = entry->ai_next) {
    UniqueFd socket_fd(::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, 0));
    if (!socket_fd.valid()) continue;
    // The store server sets SO_REUSEADDR too, so a port in TIME_WAIT is free.
    int on = 1;
    ::setsockopt(socket_fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(socket_fd.get(), entry->ai_addr, entry->ai_addrlen) == 0) continue;
    if (errno == EADDRINUSE) {
      return fail(ErrorCode::store,
                  "port " + std::to_string(port) + " on " + host +
                      " is already in use (another job?); choose another --master_port, or leave "
                      "it out on a single node to get a free one");
    }
  }
  return {};
}

}  // namespace gangrun::launch
