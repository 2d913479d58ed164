// WaitUntil: the one bounded wait of the tests that watch another thread or process.
//
// A test waits for a condition it can observe (a state, a counter, an event it recorded),
// never for a length of time. The bound is a hang guard, not a timing assertion: a test
// asserts on whether the condition came (and on what it shows), never on how long it took,
// so a slow or loaded machine only makes it slower. Every module's tests use this one
// (tests/workers/processes.h re-exports it under switchyard::workers::testing).
//
// Header-only: each test binary includes it where it needs it.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace switchyard::testing {

// The hang guard of a wait: far beyond what any condition needs on a loaded machine.
inline constexpr double kWaitSeconds = 60;

// Polls `pred` every `poll` until it holds or `seconds` passed; its last value. `pred` may
// act as well as look (drive a loop, send the next event) as long as it may run many times.
inline bool WaitUntil(const std::function<bool()>& pred, double seconds = kWaitSeconds,
                      std::chrono::microseconds poll = std::chrono::milliseconds(5)) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return pred();
    std::this_thread::sleep_for(poll);  // the polling interval, not a synchronisation
  }
  return true;
}

}  // namespace switchyard::testing
