// net_budget benchmarks: planner decisions per second (against a naive planner that
// re-walks the topology for every estimate), grant/release and credit operations per
// second, and budget enforcement error (achieved vs configured class shares, virtual
// time).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
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

// --- Collectives sharing a link with KV moves (virtual time) ---
//
// A decode step of Llama-3.1-70B with TP 4 on H200s, as gpu0 of the TP group sees it: 80
// layers x 2 ring all-reduces of a 64-token batch's activations (64 x 8192 x BF16 = 1 MiB;
// each GPU sends 2 (tp-1)/tp of it, 1.5 MiB, on its NVLink), each after 1/160 of the
// step's 9 ms of compute (its weights read at 0.8 of 4.8 TB/s), the next layer waiting for
// it. Beside it, optionally, KV moves from gpu0 to gpu4 (two 64 MiB transfers in flight
// back to back, the throughput class) on the same NVLink. The budgets pace every class:
// a transfer is done once its class has paid back the bytes granted up to and including
// it on the shared channel (the token debt, at the class's rate of the moment), as a paced
// sender would send them. With budgets the all-reduces run in the control class, whose
// reserve is the share configured for collectives; without, every transfer is in one
// class, one FIFO queue, as on a link that tells no traffic apart.
struct CollectiveRun {
  bool kv = false;             // KV moves beside the all-reduces
  bool budgets = true;         // classes apart (false: one class for all)
  double control_reserve = 0;  // the collectives' share on NVLink (0: the policy's default)
};

struct CollectiveOutcome {
  double step_ms = 0, collective_ms = 0, kv_gb_per_s = 0;
};

// Transfers on one channel, each done once its class has paid back the bytes granted up to
// it. Polled: Poll() ends what is paid and says when to look again.
class PacedChannel {
 public:
  PacedChannel(const LinkBudgets& b, ChannelIndex ch) : b_(b), ch_(ch) {}
  void Asked(TrafficClass c, uint64_t bytes) { queued_[ClassIndex(c)] += bytes; }
  void Granted(const Grant& g, std::function<void()> done) {
    const size_t k = ClassIndex(g.traffic_class());
    queued_[k] -= g.bytes();
    ends_[k].push_back(
        {static_cast<double>(b_.State(ch_, g.traffic_class()).granted_bytes), std::move(done)});
  }
  // Ends the paid transfers; the delay until one may be paid next (0: none left).
  Duration Poll() {
    Duration next{0};
    for (TrafficClass c : kAllClasses) {
      auto& ends = ends_[ClassIndex(c)];
      while (!ends.empty()) {
        const ClassState st = b_.State(ch_, c);
        const double owed = st.backlog_bytes - static_cast<double>(queued_[ClassIndex(c)]);
        const double left = ends.front().first - (static_cast<double>(st.granted_bytes) - owed);
        if (left > 0.5) {
          const double s = left / std::max(st.rate_bytes_per_s, 1.0);
          const Duration d = std::clamp(Seconds(s), Duration(50), Micros(2));
          next = next == Duration{0} ? d : std::min(next, d);
          break;
        }
        std::function<void()> done = std::move(ends.front().second);
        ends.pop_front();
        done();
      }
    }
    return next;
  }

 private:
  const LinkBudgets& b_;
  ChannelIndex ch_;
  std::array<uint64_t, kNumClasses> queued_{};
  std::array<std::deque<std::pair<double, std::function<void()>>>, kNumClasses> ends_;
};

CollectiveOutcome RunCollectives(const CollectiveRun& run, int steps) {
  const Topology& t = H200();
  VirtualEventLoop loop;
  BudgetPolicy policy;
  if (run.control_reserve > 0) policy.control_reserve_by_link_kind["nvlink"] = run.control_reserve;
  LinkBudgets budgets(t, &loop, policy);
  const Path nvlink = *t.FindPath("node0/gpu0", "node0/nvswitch");
  const Path peer = *t.FindPath("node0/gpu0", "node0/gpu4");
  PacedChannel wire(budgets, nvlink.hops[0].channel());
  constexpr int kCollectives = 160;
  constexpr uint64_t kChunk = 3 * (1 << 20) / 2, kMove = 64 << 20;
  const Duration compute = Micros(9000) / kCollectives;
  const TrafficClass cls = run.budgets ? TrafficClass::kControl : TrafficClass::kThroughput;
  CollectiveOutcome out;
  int left = steps * kCollectives;
  double kv_bytes = 0;
  bool stop = false;
  std::function<void()> layer = [&] {
    if (left-- == 0) return (void)(stop = true);
    loop.PostAfter(compute, [&] {
      const Time asked = loop.Now();
      wire.Asked(cls, kChunk);
      budgets.Acquire(nvlink, cls, kChunk, [&, asked](Result<Grant> g) {
        auto held = std::make_shared<Grant>(std::move(*g));
        wire.Granted(*held, [&, asked, held] {
          out.collective_ms += ToSeconds(loop.Now() - asked) * 1e3;
          held->Release();
          layer();
        });
      });
    });
  };
  std::function<void()> move = [&] {
    wire.Asked(TrafficClass::kThroughput, kMove);
    budgets.Acquire(peer, TrafficClass::kThroughput, kMove, [&](Result<Grant> g) {
      auto held = std::make_shared<Grant>(std::move(*g));
      wire.Granted(*held, [&, held] {
        kv_bytes += static_cast<double>(held->bytes());
        held->Release();
        if (!stop) move();
      });
    });
  };
  const Time start = loop.Now();
  if (run.kv) move(), move();
  layer();
  while (!stop) {
    const Duration d = wire.Poll();
    loop.RunUntil(loop.Now() + (d == Duration{0} ? Micros(2) : d));
  }
  const double span = ToSeconds(loop.Now() - start);
  out.step_ms = span * 1e3 / steps;
  out.collective_ms /= steps;
  out.kv_gb_per_s = kv_bytes / span / 1e9;
  return out;
}

void ReportCollectives(const std::map<std::string, bench::Measured>&, bench::Report* report) {
  constexpr int kSteps = 50;
  const CollectiveOutcome idle = RunCollectives({false, true, 0}, kSteps);
  const CollectiveOutcome fifo = RunCollectives({true, false, 0}, kSteps);
  const CollectiveOutcome dflt = RunCollectives({true, true, 0}, kSteps);
  const CollectiveOutcome share = RunCollectives({true, true, 0.9}, kSteps);
  const char* what = "70B TP4 decode step on H200 NVLink, 160 all-reduces of 1.5 MiB";
  auto add = [&](const std::string& name, const CollectiveOutcome& o, const std::string& how) {
    report->Add({"collective_step_ms_" + name, o.step_ms, "ms", false, "idle link", idle.step_ms,
                 std::string(what) + "; " + how});
    report->Add({"collective_allreduce_ms_" + name, o.collective_ms, "ms", false, "idle link",
                 idle.collective_ms, "all-reduce time per step; " + how});
    report->Add({"collective_kv_gb_per_s_" + name, o.kv_gb_per_s, "GB/s", true, "", std::nullopt,
                 "KV moved beside it on the same NVLink; " + how});
  };
  add("kv_no_budgets", fifo, "KV moves beside it, one class for all (FIFO)");
  add("kv_budgets_default", dflt, "KV in throughput, all-reduces in control (reserve 0.05)");
  add("kv_budgets_share_0_9", share, "as default, NVLink control reserve 0.9 (the collectives')");
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
SY_BENCH_REPORT(net_budget_collectives, ReportCollectives);
