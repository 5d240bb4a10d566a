// A fresh directory for one test, removed with everything in it when the
// test ends.
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace gangrun::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gangrun-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

  // Writes text to name (its folders made as needed), mode 0755 when
  // executable, else 0644; returns the file's path.
  std::string write(const std::string& name, const std::string& text,
                    bool executable = false) const {
    std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    ::chmod(file.c_str(), executable ? 0755 : 0644);
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gangrun::test
