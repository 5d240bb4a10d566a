// A shared library opened at run time (dlopen), closed when the owner goes.
// Used for vendor runtimes gangrun must not link against (libcuda.so.1,
// libze_loader.so.1): a missing library or symbol is an Error that names the
// file or the symbol, never a crash at start-up.
//
// Not thread-safe per object; dlerror() text is per thread in glibc, so two
// objects may be used from two threads.
#pragma once

#include "util/error.hpp"

#include <bit>
#include <string>
#include <type_traits>

namespace gangrun {

class DynamicLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL). RTLD_NOW makes an incomplete library
  // fail here rather than at the first call; RTLD_LOCAL keeps its symbols out
  // of the global namespace. path is used as given: a bare name is searched
  // the way the dynamic loader searches (LD_LIBRARY_PATH, ld.so.cache, ...).
  // The error (ErrorCode::not_found) carries dlerror()'s text.
  static Expected<DynamicLibrary> open(const std::string& path);

  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  ~DynamicLibrary();

  // The path it was opened with.
  const std::string& path() const { return path_; }

  // The function named name, typed as T (a function type:
  // symbol<int(unsigned)>("cuInit") gives int(*)(unsigned)). The error
  // (ErrorCode::not_found) names the symbol and the library.
  template <typename T>
  Expected<T*> symbol(const char* name) const {
    static_assert(std::is_function_v<T>, "symbol<T> takes a function type");
    GANGRUN_TRY_ASSIGN(address, raw_symbol(name));
    return std::bit_cast<T*>(*address);
  }

  // Like symbol(), but nullptr when the library lacks it (an entry point that
  // only newer versions export).
  template <typename T>
  T* optional_symbol(const char* name) const {
    static_assert(std::is_function_v<T>, "optional_symbol<T> takes a function type");
    Expected<void*> address = raw_symbol(name);
    return address ? std::bit_cast<T*>(*address) : nullptr;
  }

  // Keeps the library loaded for the rest of the process: the destructor
  // will not dlclose it. For libraries that start threads or register exit
  // handlers (a GPU driver after its init), where unloading the code under
  // them crashes later.
  void keep_loaded() { keep_loaded_ = true; }

 private:
  DynamicLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  Expected<void*> raw_symbol(const char* name) const;
  void close();

  void* handle_ = nullptr;
  std::string path_;
  bool keep_loaded_ = false;
};

}  // namespace gangrun
