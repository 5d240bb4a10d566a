#include "logmux/step_rate.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using gangrun::logmux::step_count_in;
using gangrun::logmux::StepCountKind;
using gangrun::logmux::StepRate;
using namespace std::chrono_literals;

namespace {

long long count_of(const std::string& line) {
  auto count = step_count_in(line);
  return count ? count->count : -1;
}

const StepRate::Clock::time_point k_t0{};

}  // namespace

TEST_CASE("logmux::step_count_in reads tqdm's count before the bracket with its clock",
          "[logmux]") {
  CHECK(count_of(" 50%|█████     | 5/10 [00:01<00:01,  3.27it/s]") == 5);
  CHECK(count_of("train: 1234/50000 [01:02:03<4:05:06, 12.50it/s, loss=2.1]") == 1234);
  CHECK(count_of("45it [00:10,  4.50it/s]") == 45);
  CHECK(step_count_in("45it [00:10,  4.50it/s]")->kind == StepCountKind::bar);
  // A bracket without a clock is a description, not tqdm's.
  CHECK(count_of("epoch 1/10 [train]") == -1);
  CHECK(count_of("Epoch [1/10]") == -1);
}

TEST_CASE("logmux::step_count_in reads the number after step, iter or iteration", "[logmux]") {
  CHECK(count_of("step 120 loss 2.31") == 120);
  CHECK(count_of("Iter: 7, lr 0.1") == 7);
  CHECK(count_of("iteration #33") == 33);
  CHECK(count_of("{'global_step=': 1} global_step=3") == 3);
  CHECK(count_of("rank 1 step 4 of epoch 2 STEP 5") == 5);  // the last one
  CHECK(step_count_in("step 1")->kind == StepCountKind::word);
  CHECK(count_of("stepping up") == -1);
  CHECK(count_of("steps remaining") == -1);
  CHECK(count_of("step") == -1);
  CHECK(count_of("step 12345678901234567890") == -1);  // no step count, and no overflow
  CHECK(count_of("") == -1);
}

TEST_CASE("logmux::StepRate: the count's growth over the last window, per second", "[logmux]") {
  StepRate rate;
  CHECK_FALSE(rate.per_second(k_t0));
  rate.see("step 0", k_t0);
  CHECK_FALSE(rate.per_second(k_t0 + 1s));  // one reading is no rate
  for (int i = 1; i <= 40; ++i) {
    rate.see("step " + std::to_string(i * 5), k_t0 + i * 1s);  // 5 steps a second
  }
  CHECK(*rate.per_second(k_t0 + 40s) == Approx(5.0));
  // Silent: the last 10 s hold fewer steps, then none.
  CHECK(*rate.per_second(k_t0 + 45s) == Approx(2.5));
  CHECK(*rate.per_second(k_t0 + 51s) == 0.0);
}

TEST_CASE("logmux::StepRate: a rank that counts every 30 s is measured over its last gap",
          "[logmux]") {
  StepRate rate;
  for (int i = 0; i <= 4; ++i) rate.see("step " + std::to_string(i * 60), k_t0 + i * 30s);
  CHECK(*rate.per_second(k_t0 + 120s) == Approx(2.0));
  CHECK(*rate.per_second(k_t0 + 150s) == Approx(1.0));  // no count yet where one was due
  CHECK(*rate.per_second(k_t0 + 120s + 91s) == 0.0);    // three gaps without one
}

TEST_CASE("logmux::StepRate: a bar redrawn without advancing slows to 0", "[logmux]") {
  StepRate rate;
  for (int i = 0; i <= 100; ++i) {
    rate.see(std::to_string(i) + "/200 [00:01<00:01,  3.27it/s]", k_t0 + i * 100ms);
  }
  CHECK(*rate.per_second(k_t0 + 10s) == Approx(10.0));
  for (int i = 101; i <= 300; ++i) {
    rate.see("100/200 [00:01<00:01,  3.27it/s]", k_t0 + i * 100ms);  // the same count
  }
  CHECK(*rate.per_second(k_t0 + 30s) == 0.0);
}

TEST_CASE("logmux::StepRate: a count that goes down starts again; the newest track is read",
          "[logmux]") {
  StepRate rate;
  rate.see("step 100", k_t0);
  rate.see("step 110", k_t0 + 1s);
  CHECK(*rate.per_second(k_t0 + 1s) == Approx(10.0));
  rate.see("step 3", k_t0 + 2s);  // a new run of counts
  CHECK_FALSE(rate.per_second(k_t0 + 2s));
  rate.see("step 5", k_t0 + 3s);
  CHECK(*rate.per_second(k_t0 + 3s) == Approx(2.0));
  // A bar on the other stream, updated later, is what is read now.
  rate.see("7/70 [00:01<00:09, 7.00it/s]", k_t0 + 4s);
  rate.see("14/70 [00:02<00:08, 7.00it/s]", k_t0 + 5s);
  CHECK(*rate.per_second(k_t0 + 5s) == Approx(7.0));
}

TEST_CASE("logmux::StepRate: a bar redrawn a thousand times a second is read right", "[logmux]") {
  StepRate rate;
  for (int i = 0; i < 20000; ++i) {
    rate.see(std::to_string(i) + "it [00:01, 1000.00it/s]", k_t0 + i * 1ms);
  }
  CHECK(*rate.per_second(k_t0 + 19999ms) == Approx(1000.0).epsilon(0.02));
}
