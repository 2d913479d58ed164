// Stack: the scheduler's stack as serve's driver (driver/scheduler_driver.h) and replay
// (replay/replay.h) both assemble it, built one way for both: the policy, the link
// budgets and transfer planner of net_budget over a cluster topology, the core, and the
// runtime that drives the core with one engine per worker, a tool waiter and a KV mover
// on an event loop. What differs stays with the caller: serve's engines and real tiers on
// an AsioEventLoop, replay's simulated engines, tools and mover on a VirtualEventLoop (so
// that a replay result says something about serve).
//
// BuildStack makes the policy, budgets and core from a StackSpec; Stack::StartRuntime
// adds the runtime once the caller has made its engines, tool waiter and mover (which may
// need the budgets: replay's mover times moves by the planner's grants).
//
// Thread-safety: build and start on one thread; then the runtime's rules (loop thread).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/result.h"
#include "executors/engine.h"
#include "executors/kv_mover.h"
#include "executors/runtime.h"
#include "executors/tool_waiter.h"
#include "scheduler/core.h"
#include "scheduler/net_budget_env.h"
#include "scheduler/policy.h"

namespace switchyard::executors {

// vLLM's watermark: the fraction of a worker's KV kept free when admitting a node, so
// running decodes have blocks to grow into (CoreOptions::admission_watermark 0: this).
inline constexpr double kDefaultAdmissionWatermark = 0.01;

struct StackSpec {
  std::string policy = "switchyard";  // a scheduler::CreatePolicy spec
  scheduler::ClusterShape shape;      // the topology (scheduler::BuildClusterTopology)
  // Optional: edits the topology before the budgets are made (serve: link names, figure
  // sources, a link file's measured figures).
  std::function<Status(v1::Topology*)> edit_topology;
  // Optional: the location map of the edited topology (serve's joined workers on other
  // hosts; read after edit_topology ran); unset: scheduler::ClusterLocationMap(shape).
  scheduler::LocationMap device_of;
  scheduler::CoreOptions core;  // admission_watermark 0: kDefaultAdmissionWatermark
  const scheduler::ComputeCostModel* cost = nullptr;  // the default model's; borrowed
};

struct Stack {
  std::unique_ptr<scheduler::Policy> policy;
  scheduler::LocationMap device_of;                      // Location -> the topology's device
  std::unique_ptr<scheduler::NetBudgetEnvironment> env;  // planner and grant issuer
  std::unique_ptr<scheduler::Core> core;
  std::unique_ptr<Runtime> runtime;  // after StartRuntime

  // The runtime over the core: engines[w] runs worker w's sequences. The engines, tools
  // and mover are borrowed and must outlive the runtime.
  Runtime* StartRuntime(EventLoop* loop, std::vector<Engine*> engines, ToolWaiter* tools,
                        KvMover* mover);
};

// The policy (InvalidArgument "scheduler policy: ..." for a bad spec, or the oracle without
// spec.core.foresight), the topology and its link budgets on `loop`, and the core.
Result<Stack> BuildStack(StackSpec spec, EventLoop* loop);

}  // namespace switchyard::executors
