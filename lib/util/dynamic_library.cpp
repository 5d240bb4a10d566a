#include "util/dynamic_library.hpp"

#include <dlfcn.h>

#include <utility>

namespace gangrun {

namespace {

std::string last_dl_error() {
  const char* text = ::dlerror();
  return text != nullptr ? text : "unknown dynamic loader error";
}

}  // namespace

Expected<DynamicLibrary> DynamicLibrary::open(const std::string& path) {
  ::dlerror();  // clear a stale message
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return fail(ErrorCode::not_found, last_dl_error());
  return DynamicLibrary(handle, path);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      path_(std::move(other.path_)),
      keep_loaded_(other.keep_loaded_) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    keep_loaded_ = other.keep_loaded_;
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() { close(); }

void DynamicLibrary::close() {
  if (handle_ != nullptr && !keep_loaded_) ::dlclose(handle_);
  handle_ = nullptr;
}

Expected<void*> DynamicLibrary::raw_symbol(const char* name) const {
  if (handle_ == nullptr) {
    return fail(ErrorCode::internal,
                std::string("symbol ") + name + " looked up in a closed library");
  }
  // A symbol may legitimately be null, so success is "dlerror() stayed
  // empty", not "dlsym() returned non-null".
  ::dlerror();
  void* address = ::dlsym(handle_, name);
  if (const char* text = ::dlerror(); text != nullptr) {
    return fail(ErrorCode::not_found,
                std::string("symbol ") + name + " not found in " + path_ + " (" + text + ")");
  }
  if (address == nullptr) {
    return fail(ErrorCode::not_found, std::string("symbol ") + name + " is null in " + path_);
  }
  return address;
}

}  // namespace gangrun
