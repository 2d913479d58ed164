// Shared helpers for scheduler tests: a fixed-rate compute cost model, workflow and event
// builders, and a core on a simulated fabric with the core tests' KV geometry.
#pragma once

#include <string>
#include <vector>

#include "scheduler/core.h"
#include "scheduler/simulated_fabric.h"

namespace switchyard::scheduler::testing {

// Prefill 25 us/token, decode 5 ms/step, independent of context: easy hand arithmetic.
class FixedRateCost final : public ComputeCostModel {
 public:
  explicit FixedRateCost(uint64_t bytes_per_token = 131072) : bpt_(bytes_per_token) {}
  Duration PrefillTime(int64_t n, int64_t) const override { return Micros(25) * n; }
  Duration DecodeTime(int64_t s, int64_t) const override { return Millis(5) * s; }
  uint64_t KvBytesPerToken() const override { return bpt_; }

 private:
  uint64_t bpt_;
};

inline v1::ProgramNode Llm(const std::string& id, std::vector<std::string> deps,
                           const std::string& ctx, v1::CacheRef::Mode mode, int64_t tokens,
                           int64_t max_out, const std::string& model = "m") {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::LLM);
  for (auto& d : deps) n.add_deps(d);
  if (!ctx.empty()) {
    auto* r = n.add_cache_refs();
    r->set_context(ctx);
    r->set_mode(mode);
  }
  if (mode == v1::CacheRef::EXTEND) {
    n.mutable_hints()->set_extend_tokens(tokens);
  } else {
    n.mutable_hints()->set_prompt_tokens(tokens);
  }
  n.mutable_hints()->set_max_output_tokens(max_out);
  n.set_model_id(model);
  return n;
}

inline v1::ProgramNode Tool(const std::string& id, std::vector<std::string> deps,
                            const std::string& tool, int64_t expected_ms, bool side_effect = false,
                            const std::string& idem = "") {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::TOOL);
  for (auto& d : deps) n.add_deps(d);
  n.set_tool_name(tool);
  n.mutable_hints()->set_expected_duration_ms(expected_ms);
  n.set_side_effect(side_effect);
  n.set_idempotency_key(idem);
  return n;
}

inline v1::Workflow Wf(const std::string& id, const std::string& tenant,
                       std::vector<v1::ProgramNode> nodes, int64_t deadline_ms = 0) {
  v1::Workflow w;
  w.set_id(id);
  w.set_tenant(tenant);
  w.set_deadline_ms(deadline_ms);
  for (auto& n : nodes) *w.add_nodes() = n;
  return w;
}

inline Event Submit(const v1::Workflow& w) {
  Event e;
  e.kind = EventKind::kWorkflowSubmitted;
  e.workflow = w;
  return e;
}
inline Event Of(EventKind k, const std::string& wf, const std::string& node = "") {
  Event e;
  e.kind = k;
  e.workflow_id = wf;
  e.node_id = node;
  return e;
}
inline Event LlmDone(const std::string& wf, const std::string& node, int64_t out,
                     Duration model_time, Status st = Status::OK()) {
  Event e = Of(EventKind::kLlmFinished, wf, node);
  e.output_tokens = out;
  e.model_time = model_time;
  e.status = st;
  return e;
}
inline Event ToolDone(const std::string& wf, const std::string& node, Status st = Status::OK()) {
  Event e = Of(EventKind::kToolFinished, wf, node);
  e.status = st;
  return e;
}
inline Event Xfer(uint64_t id, bool ok = true) {
  Event e;
  e.kind = ok ? EventKind::kTransferCompleted : EventKind::kTransferFailed;
  e.transfer_id = id;
  if (!ok) e.status = Status::Unavailable("injected");
  return e;
}
inline Event Tick() { return Event{}; }

// The core tests' KV geometry: bytes per token, tokens per block.
constexpr uint64_t kBpt = 1000;
constexpr int64_t kBlock = 16;

// The KV bytes of `blocks` blocks.
inline uint64_t BlockBytes(int64_t blocks) { return static_cast<uint64_t>(blocks * kBlock) * kBpt; }

// One engine step of `worker` (kEngineReport): its steps and the sequences that ran out of
// blocks.
inline Event EngineReport(int worker, std::vector<SeqStep> steps,
                          std::vector<SeqStep> exhausted = {}) {
  Event e;
  e.kind = EventKind::kEngineReport;
  e.worker = worker;
  e.steps = std::move(steps);
  e.exhausted = std::move(exhausted);
  return e;
}

// A Core on a simulated fabric, with FixedRateCost(kBpt); At(t, e) hands it `e` at t seconds.
struct CoreFixture {
  CoreFixture(CoreOptions o, const Policy* p)
      : fabric(SimulatedFabric::Options{}), core(o, p, &fabric, &fabric, &cost) {}
  Commands At(double t, const Event& e) { return core.handle(e, Time::FromSeconds(t)); }
  SimulatedFabric fabric;
  FixedRateCost cost{kBpt};
  Core core;
};

}  // namespace switchyard::scheduler::testing
