#pragma once
// A wall-clock limit that holds for every Z3 call on one context. Z3's own `timeout` parameter
// is not enough: in Z3 4.8.12 some nonlinear queries stay in Z3_solver_check far past it, and
// the polynomial simplifier has no timeout at all. The watchdog thread calls
// z3::context::interrupt() once the armed deadline passes, and again every few milliseconds
// until disarmed (an interrupt that arrives between two Z3 calls is lost), so the running
// check or simplify returns `unknown` or throws z3::exception ("canceled").
#include <z3++.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace eqfuse::rules::prove {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Watchdog(z3::context& ctx);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Interrupts Z3 calls on the context from `deadline` on, until disarm().
  void arm(Clock::time_point deadline);
  // After it returns no interrupt for the last arm() reaches the context. True when it fired.
  bool disarm();

 private:
  void loop();

  z3::context& ctx_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  bool fired_ = false;
  bool stop_ = false;
  Clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace eqfuse::rules::prove
