#include "rules/prove/watchdog.h"

namespace eqfuse::rules::prove {

Watchdog::Watchdog(z3::context& ctx) : ctx_(ctx), thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::arm(Clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    fired_ = false;
    deadline_ = deadline;
  }
  wake_.notify_all();
}

bool Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
  return fired_;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (Clock::now() < deadline_) {
      wake_.wait_until(lock, deadline_);
      continue;
    }
    // Under the lock, so that disarm() cannot return while an interrupt is on its way.
    fired_ = true;
    ctx_.interrupt();
    wake_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

}  // namespace eqfuse::rules::prove
