#include "supervise/orphans.hpp"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <string>

namespace gangrun::supervise {

std::vector<pid_t> list_children() {
  std::vector<pid_t> children;
  // Children are listed per thread of the parent; gangrun forks from one
  // thread, but orphans are re-parented to whichever thread the kernel picks.
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return children;
  while (dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(std::string("/proc/self/task/") + entry->d_name + "/children");
    pid_t pid = 0;
    while (file >> pid) children.push_back(pid);
  }
  ::closedir(tasks);
  return children;
}

int reap_exited_orphans(const std::set<pid_t>& keep) {
  int reaped = 0;
  for (pid_t pid : list_children()) {
    if (keep.contains(pid)) continue;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) ++reaped;
  }
  return reaped;
}

int kill_orphans(const std::set<pid_t>& keep, int max_rounds) {
  int killed = 0;
  for (int round = 0; round < max_rounds; ++round) {
    std::vector<pid_t> orphans;
    for (pid_t pid : list_children()) {
      if (!keep.contains(pid)) orphans.push_back(pid);
    }
    if (orphans.empty()) break;
    for (pid_t pid : orphans) {
      // The orphan may lead a group of its own (it called setsid); members of
      // that group would otherwise be re-parented one round later.
      if (::getpgid(pid) == pid) ::killpg(pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    for (pid_t pid : orphans) {
      int status = 0;
      // SIGKILL cannot be caught, so this wait is short (a process stuck in
      // uninterruptible sleep is the one case it is not).
      if (::waitpid(pid, &status, 0) == pid) ++killed;
    }
  }
  return killed;
}

}  // namespace gangrun::supervise
