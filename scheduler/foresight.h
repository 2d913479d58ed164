// Foresight: what a replayed trace recorded about its sessions' future — each tool's
// duration and each LLM call's output length — handed to the oracle policy only.
//
// The oracle (policy "oracle", oracle_policy.h) is the default policy's structure with
// perfect prediction: it bounds what better prediction could give any policy. The core
// reads a Foresight only when its policy says it uses one (Policy::UsesForesight); for
// every other policy it is never consulted, whatever CoreOptions hold, and no policy sees
// it directly: the core turns it into the inputs it builds (WaitInput::wait_quantiles,
// IdleContextInfo::until_next_use, the run-time estimate that orders and places calls).
// Replay builds one from the trace's NodeActual records; serve has none, and refuses the
// oracle.
//
// Thread-safety: const methods, called on the core's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/time.h"

namespace switchyard::scheduler {

class Foresight {
 public:
  virtual ~Foresight() = default;
  // The tool node's recorded duration; nullopt when the trace does not hold one.
  virtual std::optional<Duration> ToolDuration(const std::string& workflow,
                                               const std::string& node) const = 0;
  // The LLM node's recorded output tokens; nullopt when the trace does not hold them.
  virtual std::optional<int64_t> OutputTokens(const std::string& workflow,
                                              const std::string& node) const = 0;
};

}  // namespace switchyard::scheduler
