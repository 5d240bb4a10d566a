#include "accel/cpu_backend.hpp"

#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace accel = gangrun::accel;

namespace {

struct CpuSetFree {
  void operator()(cpu_set_t* set) const { CPU_FREE(set); }
};

// This process's mask read independently of the code under test, the way
// Python's os.sched_getaffinity would report it (a set large enough for any
// kernel).
std::vector<int> affinity_in_test() {
  constexpr std::size_t k_cpus = 1 << 16;
  std::unique_ptr<cpu_set_t, CpuSetFree> set(CPU_ALLOC(k_cpus));
  std::size_t size = CPU_ALLOC_SIZE(k_cpus);
  CPU_ZERO_S(size, set.get());
  REQUIRE(::sched_getaffinity(0, size, set.get()) == 0);
  std::vector<int> cpus;
  for (std::size_t cpu = 0; cpu < k_cpus; ++cpu) {
    if (CPU_ISSET_S(cpu, size, set.get())) cpus.push_back(static_cast<int>(cpu));
  }
  CHECK(static_cast<int>(cpus.size()) == CPU_COUNT_S(size, set.get()));
  return cpus;
}

std::vector<int> indices(const accel::BackendReport& report) {
  std::vector<int> out;
  for (const accel::Device& device : report.devices) out.push_back(device.index);
  return out;
}

}  // namespace

TEST_CASE("cpu: probe_cpu gives one device per CPU in the affinity mask", "[accel][cpu]") {
  std::vector<int> expected = affinity_in_test();
  accel::BackendReport report = accel::probe_cpu();
  CHECK(report.kind == accel::DeviceKind::cpu);
  CHECK_FALSE(report.unavailable);
  CHECK(report.devices.size() == expected.size());
  CHECK(indices(report) == expected);
  struct utsname names {};
  REQUIRE(::uname(&names) == 0);
  for (const accel::Device& device : report.devices) {
    CHECK(device.kind == accel::DeviceKind::cpu);
    CHECK(device.architecture == names.machine);
    CHECK(device.name == report.devices.front().name);
  }
}

TEST_CASE("cpu: under a one-CPU affinity mask probe_cpu gives that one CPU", "[accel][cpu]") {
  int chosen = affinity_in_test().back();
  auto bit = static_cast<std::size_t>(chosen);
  std::array<int, 2> fds{};
  REQUIRE(::pipe(fds.data()) == 0);
  // Sized for the chosen CPU, which may lie past a fixed cpu_set_t's 1024.
  std::unique_ptr<cpu_set_t, CpuSetFree> one(CPU_ALLOC(bit + 1));
  std::size_t size = CPU_ALLOC_SIZE(bit + 1);
  CPU_ZERO_S(size, one.get());
  CPU_SET_S(bit, size, one.get());
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child narrows only its own mask; no Catch2 here, only _exit.
    ::close(fds[0]);
    if (::sched_setaffinity(0, size, one.get()) != 0) ::_exit(2);
    accel::BackendReport report = accel::probe_cpu();
    std::array<int, 2> answer{static_cast<int>(report.devices.size()),
                              report.devices.empty() ? -1 : report.devices.front().index};
    ssize_t written = ::write(fds[1], answer.data(), sizeof(answer));
    ::_exit(written == static_cast<ssize_t>(sizeof(answer)) ? 0 : 3);
  }
  ::close(fds[1]);
  std::array<int, 2> answer{-1, -1};
  ssize_t got = ::read(fds[0], answer.data(), sizeof(answer));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof(answer)));
  CHECK(answer[0] == 1);
  CHECK(answer[1] == chosen);
}

TEST_CASE("cpu: cpu_report names each CPU by its number", "[accel][cpu]") {
  accel::BackendReport report = accel::cpu_report({0, 2, 5}, "Some CPU", "aarch64");
  CHECK(report.kind == accel::DeviceKind::cpu);
  CHECK_FALSE(report.unavailable);
  CHECK(indices(report) == std::vector<int>{0, 2, 5});
  for (const accel::Device& device : report.devices) {
    CHECK(device.kind == accel::DeviceKind::cpu);
    CHECK(device.name == "Some CPU");
    CHECK(device.architecture == "aarch64");
    CHECK(device.uuid.empty());
    CHECK_FALSE(device.pci);
  }
  CHECK(accel::cpu_report({}, "", "x86_64").devices.empty());
}

TEST_CASE("cpu: the model name from /proc/cpuinfo text", "[accel][cpu]") {
  CHECK(accel::cpuinfo_model_name("processor\t: 0\n"
                                  "vendor_id\t: GenuineIntel\n"
                                  "model\t\t: 143\n"
                                  "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
                                  "processor\t: 1\n"
                                  "model name\t: second\n") == "Intel(R) Xeon(R) Platinum 8480+");
  // "model" alone is not "model name"; ARM kernels print no model name.
  CHECK(accel::cpuinfo_model_name("processor\t: 0\nmodel\t\t: 143\n").empty());
  CHECK(
      accel::cpuinfo_model_name("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n").empty());
  CHECK(accel::cpuinfo_model_name("").empty());
  CHECK(accel::cpuinfo_model_name("model name\t:\n").empty());
}

TEST_CASE("cpu: cpu_list_text writes the kernel's list syntax", "[accel][cpu]") {
  CHECK(accel::cpu_list_text({}).empty());
  CHECK(accel::cpu_list_text({0}) == "0");
  CHECK(accel::cpu_list_text({7}) == "7");
  CHECK(accel::cpu_list_text({0, 1}) == "0-1");  // two in a row are a range, as the kernel writes
  CHECK(accel::cpu_list_text({0, 1, 2, 3}) == "0-3");
  CHECK(accel::cpu_list_text({0, 2, 4}) == "0,2,4");
  CHECK(accel::cpu_list_text({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(accel::cpu_list_text({1, 2, 3, 5, 6, 7, 1023, 1024, 1025, 2047}) ==
        "1-3,5-7,1023-1025,2047");
}
