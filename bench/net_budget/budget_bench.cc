// net_budget benchmarks: planner decisions per second (against a naive planner that
// re-walks the topology for every estimate), grant/release and credit operations per
// second, and budget enforcement error (achieved vs configured class shares, virtual
// time).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "base/virtual_event_loop.h"
#include "bench/common/report.h"
#include "net_budget/budget.h"
#include "net_budget/credit.h"
#include "net_budget/planner.h"
#include "net_budget/topology.h"

namespace {

using namespace switchyard;
using namespace switchyard::net_budget;

const Topology& H200() {
  static const Topology* t = [] {
    auto r = Topology::LoadFile(std::string(SY_SOURCE_DIR) + "/configs/topologies/h200x8.json");
    if (!r.ok()) {
      std::fprintf(stderr, "bench: %s\n", r.status().ToString().c_str());
      std::abort();
    }
    return new Topology(std::move(r).value());
  }();
  return *t;
}

// Estimates between every GPU pair and GPU -> other-socket CPU, under a throughput load.
struct PlannerFixture {
  VirtualEventLoop loop;
  LinkBudgets budgets{H200(), &loop};
  std::vector<std::pair<DeviceIndex, DeviceIndex>> pairs;
  std::vector<Grant> load;
  PlannerFixture() {
    const Topology& t = H200();
    for (int i = 0; i < 8; ++i) {
      auto src = *t.FindDevice("node0/gpu" + std::to_string(i));
      pairs.push_back({src, *t.FindDevice("node0/gpu" + std::to_string((i + 3) % 8))});
      pairs.push_back({src, *t.FindDevice(i < 4 ? "node0/nic5" : "node0/nic1")});
      auto p = t.FindPath(src, *t.FindDevice("fabric"));
      load.push_back(std::move(budgets.TryAcquire(*p, TrafficClass::kThroughput, 1 << 30)).value());
    }
  }
};

void BM_PlannerEstimate(benchmark::State& state) {
  PlannerFixture f;
  Planner planner(H200(), &f.budgets);
  size_t i = 0;
  for (auto _ : state) {
    const auto& [s, d] = f.pairs[i++ % f.pairs.size()];
    auto e = planner.EstimateTransfer(s, d, 64 << 20, TrafficClass::kLatency);
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlannerEstimate);

// The naive baseline: find the path and read every link's model on each decision.
void BM_PlannerNaive(benchmark::State& state) {
  PlannerFixture f;
  const Topology& t = H200();
  size_t i = 0;
  double rates[16], backlog[16];
  for (auto _ : state) {
    const auto& [s, d] = f.pairs[i++ % f.pairs.size()];
    auto path = t.FindPath(s, d);
    f.budgets.Snapshot(*path, TrafficClass::kLatency, rates, backlog);
    double alpha = 0, worst = 0;
    for (size_t h = 0; h < path->hops.size(); ++h) {
      auto m = t.link(path->hops[h].link).Model();
      alpha += m->alpha_s;
      worst = std::max(worst, (backlog[h] + (64 << 20)) / std::min(rates[h], m->bandwidth()));
    }
    benchmark::DoNotOptimize(alpha + worst);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlannerNaive);

// TryAcquire + Release on a 3-hop path, with virtual time advanced 1 ns per operation
// (64 B at 64 GB/s) so that the class never falls behind; includes the budget's timer.
void BM_GrantRelease(benchmark::State& state) {
  const Topology& t = H200();
  VirtualEventLoop loop;
  LinkBudgets budgets(t, &loop);
  auto path = *t.FindPath("node0/gpu0", "fabric");
  uint64_t refused = 0;
  for (auto _ : state) {
    auto g = budgets.TryAcquire(path, TrafficClass::kLatency, 16);
    if (g.ok()) {
      g->Release();
    } else {
      ++refused;
    }
    loop.RunUntil(loop.Now() + Duration(1));
  }
  state.counters["refused"] = static_cast<double>(refused);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GrantRelease);

void BM_CreditAcquireRelease(benchmark::State& state) {
  VirtualEventLoop loop;
  CreditManager credit(&loop);
  (void)credit.SetLimits("peer", {1 << 30, 64, 8});
  for (auto _ : state) {
    auto lease = credit.AcquireCredit("peer", 4096, "s");
    benchmark::DoNotOptimize(lease);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CreditAcquireRelease);

// Saturates all four classes on one 50 GB/s NIC port for 10 s of virtual time and returns
// the largest relative error, in percent, of a class's achieved share against the share
// the budget rules configure (weights 4:3:1:1 with background yielding disabled, so that
// the configured shares are fixed: 4/9, 3/9, 1/9, 1/9).
double EnforcementErrorPct() {
  const Topology& t = H200();
  VirtualEventLoop loop;
  BudgetPolicy policy;
  policy.latency_yield_backlog_bytes = 1e18;
  LinkBudgets budgets(t, &loop, policy);
  auto path = *t.FindPath("node0/nic0", "fabric");
  const Time t0 = Time::FromSeconds(1), t1 = Time::FromSeconds(11);
  std::array<double, kNumClasses> counted{};
  bool stop = false;
  std::function<void(TrafficClass)> submit = [&](TrafficClass c) {
    budgets.Acquire(path, c, 8 << 20, [&, c](Result<Grant> g) {
      if (!g.ok()) return;
      if (g->granted_at() >= t0 && g->granted_at() < t1) counted[ClassIndex(c)] += g->bytes();
      g->Release();
      if (!stop) submit(c);
    });
  };
  for (TrafficClass c : kAllClasses) {
    for (int i = 0; i < 4; ++i) submit(c);
  }
  loop.RunUntil(t1);
  stop = true;
  const double total = 5e10 * 10;
  const double expect[] = {4.0 / 9, 3.0 / 9, 1.0 / 9, 1.0 / 9};
  double worst = 0;
  for (size_t k = 0; k < kNumClasses; ++k) {
    worst = std::max(worst, std::fabs(counted[k] / total - expect[k]) / expect[k] * 100);
  }
  return worst;
}

void ReportBudget(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  auto rate = [&](const char* name) -> std::optional<double> {
    auto it = runs.find(name);
    if (it == runs.end()) return std::nullopt;
    return it->second.items_per_second;
  };
  if (auto est = rate("BM_PlannerEstimate")) {
    report->Add({"planner_decisions_per_s", *est, "1/s", true, "naive planner (re-walks graph)",
                 rate("BM_PlannerNaive"), "8xH200 topology, cached routes, under load"});
  }
  if (auto g = rate("BM_GrantRelease")) {
    report->Add({"grant_release_ops_per_s", *g, "1/s", true, "", std::nullopt,
                 "3-hop TryAcquire+Release incl. 1 ns virtual-time step; no meaningful baseline"});
  }
  if (auto c = rate("BM_CreditAcquireRelease")) {
    report->Add({"credit_acquire_release_ops_per_s", *c, "1/s", true, "", std::nullopt,
                 "no meaningful baseline"});
  }
  report->Add({"budget_enforcement_error_pct", EnforcementErrorPct(), "%", false, "", std::nullopt,
               "max |achieved-configured|/configured share, 4 classes saturated, 10 s virtual"});
}

}  // namespace

SY_BENCH_REPORT(net_budget, ReportBudget);
