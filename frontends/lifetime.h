// Lifetime: whether a front still lives, for the callbacks it hands out.
//
// A front hands callbacks to the service, the scheduler driver, an upstream client and the
// response streams, which may call them after the front is gone (the service outlives
// it). Guard(fn) makes `fn` safe to hand out: it runs only while the lifetime has not
// ended, and End() — the first thing the owner's destructor does — waits for one that is
// running. No lock is held while `fn` runs.
//
// Copies share one lifetime: a front and the session layer it owns (frontends/session.h)
// guard their callbacks with the same one, which the front ends.
//
// Thread-safety: Guard, End and the guarded callbacks may run on any thread; End must not
// be called from a guarded callback (it would wait for itself).
#pragma once

#include <memory>
#include <utility>

#include "base/mutex.h"

namespace switchyard::frontends {

class Lifetime {
 public:
  // `fn` made safe to hand out (see above).
  template <typename F>
  auto Guard(F fn) const {
    return [state = state_, fn = std::move(fn)](auto&&... args) mutable {
      {
        MutexLock lock(&state->mu);
        if (!state->alive) return;
        ++state->running;
      }
      struct Done {
        State* state;
        ~Done() {
          MutexLock lock(&state->mu);
          if (--state->running == 0) state->idle.SignalAll();
        }
      } done{state.get()};
      fn(std::forward<decltype(args)>(args)...);
    };
  }

  // No guarded callback enters from now on; one running elsewhere is waited for.
  void End() {
    MutexLock lock(&state_->mu);
    state_->alive = false;
    while (state_->running != 0) state_->idle.Wait(&state_->mu);
  }

 private:
  struct State {
    Mutex mu;
    CondVar idle;
    bool alive GUARDED_BY(mu) = true;
    int running GUARDED_BY(mu) = 0;  // guarded callbacks running now
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace switchyard::frontends
