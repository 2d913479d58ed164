// ToolWaiter: how the runtime (executors/runtime.h) waits for a tool node. The agent
// framework runs real tools; the runtime only waits: Start reports the tool's start and
// its end. Implementations: SimulatedToolWaiter (executors/simulated.h: durations from a
// function, replay), ReportedToolWaiter (driver/report_waiter.h: the client's reports).
//
// Thread-safety: loop-thread only; callbacks run on the event loop, never synchronously
// inside Start.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "proto/switchyard/v1/workflow.pb.h"

namespace switchyard::executors {

class ToolWaiter {
 public:
  virtual ~ToolWaiter() = default;
  virtual void Start(const std::string& key, const v1::ProgramNode& node,
                     std::function<void()> started, std::function<void(Status)> done) = 0;
};

}  // namespace switchyard::executors
