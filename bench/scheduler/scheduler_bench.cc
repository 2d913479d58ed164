// Scheduler core decision cost at scale: events per second and per-event decision latency
// (P50/P99) with 10,000 live workflows and ~1,000,000 KV blocks (16 tokens each) tracked,
// for the default "switchyard" policy and, as the baseline, the "keep-during-tool"
// reference policy on the same core and workload.
//
// The workload is driven directly (no event loop): each command schedules its completion
// event in a time-ordered queue (place -> llm_finished after the estimated time, admit ->
// tool_started + tool_finished, demote/prefetch -> transfer_completed, wakeup -> tick);
// only Core::handle() is timed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <queue>
#include <random>

#include "bench/common/report.h"
#include "scheduler/core.h"
#include "scheduler/simulated_fabric.h"

namespace switchyard::scheduler {
namespace {

constexpr int kWorkflows = 10'000;
constexpr int kContextTokens = 1600;  // 100 blocks of 16 tokens per workflow -> 1M blocks
constexpr int kSteps = 40;            // llm/tool pairs per workflow (they stay live)

class BenchCost final : public ComputeCostModel {
 public:
  Duration PrefillTime(int64_t n, int64_t) const override { return Micros(25) * n; }
  Duration DecodeTime(int64_t s, int64_t) const override { return Millis(5) * s; }
  uint64_t KvBytesPerToken() const override { return 131072; }
};

struct Pending {
  Time at;
  uint64_t seq;
  Event e;
  bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Sim {
 public:
  explicit Sim(const char* policy_name) : policy_(MakePolicy(policy_name)), rng_(7) {
    SimulatedFabric::Options fo;
    fo.workers = 16;
    fo.max_grants[0] = fo.max_grants[2] = 1 << 20;
    fabric_ = std::make_unique<SimulatedFabric>(fo);
    CoreOptions o;
    o.workers = 16;
    o.hbm_bytes_per_worker = 160ULL << 30;  // simulated: room for the 2 TiB of KV
    o.max_num_seqs = 64;
    core_ = std::make_unique<Core>(o, policy_.get(), fabric_.get(), fabric_.get(), &cost_);
    for (int i = 0; i < kWorkflows; ++i) {
      Event e;
      e.kind = EventKind::kWorkflowSubmitted;
      e.workflow = Submission(i);
      Handle(e, now_);
    }
    // Warm up until every workflow has built its context.
    while (completed_first_ < kWorkflows && Step()) {
    }
  }

  // Handles the next event; returns false when none is left.
  bool Step(double* latency_ns = nullptr, EventKind* kind = nullptr) {
    if (q_.empty()) return false;
    Pending p = q_.top();
    q_.pop();
    if (kind) *kind = p.e.kind;
    now_ = std::max(now_, p.at);
    auto t0 = std::chrono::steady_clock::now();
    Commands c = core_->handle(p.e, now_);
    auto t1 = std::chrono::steady_clock::now();
    if (latency_ns) *latency_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    Absorb(p.e, c);
    return true;
  }

 private:
  v1::Workflow Submission(int i) {
    v1::Workflow w;
    w.set_id("wf" + std::to_string(i));
    w.set_tenant("tenant" + std::to_string(i % 8));
    std::string prev;
    for (int k = 0; k < kSteps; ++k) {
      auto* n = w.add_nodes();
      n->set_id("l" + std::to_string(k));
      n->set_kind(v1::LLM);
      if (!prev.empty()) n->add_deps(prev);
      auto* r = n->add_cache_refs();
      r->set_context("main");
      r->set_mode(k == 0 ? v1::CacheRef::CREATE : v1::CacheRef::EXTEND);
      n->mutable_hints()->set_prompt_tokens(kContextTokens - 16);
      n->mutable_hints()->set_extend_tokens(32);
      n->mutable_hints()->set_max_output_tokens(16);
      auto* t = w.add_nodes();
      t->set_id("t" + std::to_string(k));
      t->set_kind(v1::TOOL);
      t->add_deps(n->id());
      t->set_tool_name(k % 2 ? "search" : "exec");
      t->mutable_hints()->set_expected_duration_ms(2000);
      prev = t->id();
    }
    return w;
  }

  void Handle(const Event& e, Time at) {
    Commands c = core_->handle(e, at);
    Absorb(e, c);
  }

  void Push(Time at, Event e) { q_.push(Pending{at, seq_++, std::move(e)}); }

  void Absorb(const Event& e, const Commands& c) {
    if (e.kind == EventKind::kLlmFinished && e.node_id == "l0") ++completed_first_;
    for (const Command& x : c.list) {
      Event n;
      n.workflow_id = x.workflow_id;
      n.node_id = x.node_id;
      switch (x.kind) {
        case CommandKind::kPlace:
          n.kind = EventKind::kLlmFinished;
          n.worker = x.worker;
          n.output_tokens = 16;
          n.model_time = Millis(120);
          Push(now_ + Millis(120), n);
          break;
        case CommandKind::kAdmit: {
          n.kind = EventKind::kToolStarted;
          Push(now_, n);
          n.kind = EventKind::kToolFinished;
          Push(now_ + Millis(std::uniform_int_distribution<int>(200, 6000)(rng_)), n);
          break;
        }
        case CommandKind::kDemote:
        case CommandKind::kPrefetch:
          n.kind = EventKind::kTransferCompleted;
          n.transfer_id = x.transfer_id;
          Push(now_ + Millis(10), n);
          break;
        default:
          break;
      }
    }
    if (c.wakeup != Time::Max() && c.wakeup > now_ && c.wakeup < next_tick_) {
      next_tick_ = c.wakeup;
      Push(c.wakeup, Event{});
    }
    if (now_ >= next_tick_) next_tick_ = Time::Max();
  }

  BenchCost cost_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<SimulatedFabric> fabric_;
  std::unique_ptr<Core> core_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> q_;
  std::mt19937 rng_;
  Time now_{0};
  Time next_tick_ = Time::Max();
  uint64_t seq_ = 0;
  int completed_first_ = 0;
};

void BM_CoreHandle(benchmark::State& state, const char* policy) {
  static std::map<std::string, std::unique_ptr<Sim>> sims;
  auto& sim = sims[policy];
  if (!sim) sim = std::make_unique<Sim>(policy);
  for (auto _ : state) {
    if (!sim->Step()) state.SkipWithError("workload ran out of events");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_CoreHandle, switchyard, "switchyard")->MinTime(1.0);
BENCHMARK_CAPTURE(BM_CoreHandle, keep_during_tool, "keep-during-tool")->MinTime(1.0);

// Decision latency percentiles over 200,000 events after warm-up. With
// SY_BENCH_BREAKDOWN set, prints which event kinds make up the slowest 1% to stderr.
std::pair<double, double> Percentiles(const char* policy) {
  Sim sim(policy);
  std::vector<std::pair<double, EventKind>> lat;
  lat.reserve(200'000);
  double ns = 0;
  EventKind kind{};
  while (lat.size() < 200'000 && sim.Step(&ns, &kind)) lat.emplace_back(ns, kind);
  std::sort(lat.begin(), lat.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (lat.empty()) return {0, 0};
  if (std::getenv("SY_BENCH_BREAKDOWN")) {
    std::map<std::string, int> tail, all;
    for (size_t i = 0; i < lat.size(); ++i) {
      all[EventKindName(lat[i].second)]++;
      if (i >= lat.size() * 99 / 100) tail[EventKindName(lat[i].second)]++;
    }
    for (const auto& [k, n] : all)
      std::fprintf(stderr, "%s %-20s events=%d in_slowest_1%%=%d\n", policy, k.c_str(), n, tail[k]);
  }
  return {lat[lat.size() / 2].first / 1000.0, lat[lat.size() * 99 / 100].first / 1000.0};
}

void Report(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  auto rate = [&](const std::string& name) {
    for (const auto& [run, m] : runs)  // names carry suffixes such as "/min_time:1.000"
      if (run == name || run.rfind(name + "/", 0) == 0) return m.items_per_second;
    return 0.0;
  };
  double sy = rate("BM_CoreHandle/switchyard"), base = rate("BM_CoreHandle/keep_during_tool");
  if (sy > 0)
    report->Add({"events_per_second_10k_workflows_1M_blocks", sy, "events/s", true,
                 "keep-during-tool policy", base > 0 ? std::optional<double>(base) : std::nullopt,
                 "Core::handle with the switchyard policy"});
  auto [p50, p99] = Percentiles("switchyard");
  auto [b50, b99] = Percentiles("keep-during-tool");
  report->Add({"decision_latency_p50", p50, "us", false, "keep-during-tool policy", b50,
               "per-event Core::handle latency"});
  report->Add(
      {"decision_latency_p99", p99, "us", false, "keep-during-tool policy", b99, "goal <= 50 us"});
}
SY_BENCH_REPORT(scheduler, Report);

}  // namespace
}  // namespace switchyard::scheduler
