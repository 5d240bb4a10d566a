#include "launch/dialects/deepspeed_pid_file.hpp"

#include <cstdio>
#include <fstream>

namespace gangrun::launch {

Expected<DeepspeedPidFile> DeepspeedPidFile::write(int pid, const std::string& dir) {
  std::string path = dir + "/" + std::to_string(pid) + ".deepspeed";
  std::ofstream file(path, std::ios::trunc);
  file << pid;  // no newline, as deepspeed writes it
  file.close();
  if (!file) return fail(ErrorCode::io, "--save_pid: cannot write " + path);
  return DeepspeedPidFile(std::move(path));
}

DeepspeedPidFile::~DeepspeedPidFile() {
  if (path_) std::remove(path_->c_str());
}

}  // namespace gangrun::launch
