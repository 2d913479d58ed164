// Property tests: random workloads and fault schedules through executors::Runtime and
// scheduler::Core in virtual time. For every seed, after every event:
//   - HBM use never exceeds capacity on any worker;
//   - no command reads a context that is not committed where it reads it (shadow model
//     built only from commands and completion events, independent of the core);
//   - every transfer command carries a budget grant;
//   - no side-effect node without an idempotency key is admitted twice;
//   - the HBM ledger: on every live worker, the KV blocks its engine holds (running
//     sequences, resident idle contexts, in-flight move destinations) are exactly the
//     core's accounting, after the commands of every event were carried out;
// and at the end every workflow has ended (completed, failed with a reason, or cancelled).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "base/virtual_event_loop.h"
#include "executors/runtime.h"
#include "executors/simulated.h"
#include "executors/simulated_engine.h"
#include "executors/step_cost.h"
#include "scheduler/net_budget_env.h"
#include "scheduler/simulated_fabric.h"

namespace switchyard::executors {
namespace {

using namespace scheduler;  // NOLINT

class FlatCost final : public ComputeCostModel {
 public:
  Duration PrefillTime(int64_t n, int64_t) const override { return Micros(25) * n; }
  Duration DecodeTime(int64_t s, int64_t) const override { return Millis(5) * s; }
  uint64_t KvBytesPerToken() const override { return 131072; }
};

// Engine steps: 25 us per prefill token, 5 ms when anything decodes.
class FlatStepCost final : public StepCostModel {
 public:
  std::string_view name() const override { return "flat step cost"; }
  Duration StepTime(const StepShape& s) const override {
    return Micros(25) * s.prefill_tokens + (s.decode_seqs > 0 ? Millis(5) : Duration(0)) +
           Micros(10);
  }
};

// Contexts moved off or dropped by the drain events of all seeds.
size_t g_drain_evictions = 0;

int SeedCount() {
  if (const char* env = std::getenv("SY_PROPERTY_SEEDS")) return std::max(1, std::atoi(env));
#if defined(__SANITIZE_ADDRESS__)
  return 1500;  // ASan build: same properties, fewer seeds (CI time budget)
#else
  return 10000;
#endif
}

struct Shadow {
  std::map<std::string, Location> loc;                            // committed location per context
  std::map<uint64_t, std::pair<std::string, Location>> inflight;  // transfer -> (ctx, dst)
  std::set<std::string> inflight_ctx;
  std::set<uint64_t> drop;  // discarded while in flight
};

struct PropertyHarness {
  std::mt19937_64 rng;
  std::string failure;
  Shadow shadow;
  std::map<std::string, int> unsafe_admits;
  std::map<std::string, v1::ProgramNode> specs;  // "wf/node"
  std::set<std::string> submitted;

  explicit PropertyHarness(uint64_t seed) : rng(seed) {}
  double U() { return std::uniform_real_distribution<double>(0, 1)(rng); }
  int I(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  void Fail(const std::string& why) {
    if (failure.empty()) failure = why;
  }

  static bool OnWorker(const Location& l, int w) {
    return l.worker == w && (l.tier == Tier::kHbm || l.tier == Tier::kPeer);
  }

  void Observe(const Core& core, int workers, const Event& e, const Commands& out) {
    if (e.kind == EventKind::kTransferCompleted || e.kind == EventKind::kTransferFailed) {
      auto it = shadow.inflight.find(e.transfer_id);
      if (it != shadow.inflight.end()) {
        const auto& [ctx, dst] = it->second;
        if (e.kind == EventKind::kTransferCompleted) shadow.loc[ctx] = dst;
        if (shadow.drop.count(e.transfer_id)) shadow.loc[ctx] = Location{};
        shadow.inflight_ctx.erase(ctx);
        shadow.drop.erase(e.transfer_id);
        shadow.inflight.erase(it);
      }
    }
    if (e.kind == EventKind::kWorkerLost) {
      for (auto& [ctx, l] : shadow.loc)
        if (l.worker == e.worker) l = Location{};
      for (auto it = shadow.inflight.begin(); it != shadow.inflight.end();) {
        bool touches = it->second.second.worker == e.worker;
        if (touches || shadow.loc[it->second.first].tier == Tier::kNone) {
          shadow.inflight_ctx.erase(it->second.first);
          it = shadow.inflight.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const Command& c : out.list) Check(core, c);
    for (int w = 0; w < workers; ++w)
      if (core.hbm_used(w) > core.hbm_capacity())
        Fail("HBM over capacity on worker " + std::to_string(w));
  }

  void Check(const Core& core, const Command& c) {
    std::string s = ToString(c);
    switch (c.kind) {
      case CommandKind::kDemote:
      case CommandKind::kPrefetch:
        if (!c.grant.valid()) Fail("transfer without grant: " + s);
        if (shadow.inflight_ctx.count(c.context)) Fail("second transfer of a context: " + s);
        if (!(shadow.loc[c.context] == c.src)) Fail("transfer reads uncommitted source: " + s);
        shadow.inflight[c.transfer_id] = {c.context, c.dst};
        shadow.inflight_ctx.insert(c.context);
        break;
      case CommandKind::kDiscard:
        if (c.transfer_id != 0 && shadow.inflight.count(c.transfer_id)) {
          shadow.drop.insert(c.transfer_id);
        } else {
          shadow.loc[c.context] = Location{};
        }
        break;
      case CommandKind::kPlace: {
        const v1::ProgramNode& n = specs[c.workflow_id + "/" + c.node_id];
        for (const v1::CacheRef& r : n.cache_refs()) {
          std::string key = ContextKey(c.workflow_id, r.context());
          if (shadow.inflight_ctx.count(key)) Fail("place reads a context in flight: " + s);
          Location l = shadow.loc[key];
          // Either committed in this worker's HBM, or absent and rebuilt by this call (an
          // empty context has nothing to read).
          if (l.tier != Tier::kNone && !OnWorker(l, c.worker) && core.ContextTokens(key) > 0)
            Fail("place reads a context not committed on its worker (" + LocationString(l) +
                 "): " + s);
          shadow.loc[key] = Location{Tier::kHbm, c.worker};
        }
        break;
      }
      case CommandKind::kAdmit: {
        const v1::ProgramNode& n = specs[c.workflow_id + "/" + c.node_id];
        if (n.side_effect() && n.idempotency_key().empty() &&
            ++unsafe_admits[c.workflow_id + "/" + c.node_id] > 1)
          Fail("side-effect node admitted twice: " + s);
        break;
      }
      case CommandKind::kFail:
        if (c.reason.empty()) Fail("fail without a reason: " + s);
        break;
      default:
        break;
    }
  }

  v1::Workflow RandomWorkflow(int i, int tenants, std::vector<v1::ProgramNode>* late) {
    v1::Workflow w;
    w.set_id("wf" + std::to_string(i));
    w.set_tenant("t" + std::to_string(I(0, tenants - 1)));
    if (U() < 0.3) w.set_deadline_ms(I(500, 20000));
    int nodes = I(1, 6);
    std::vector<std::string> ids;
    for (int k = 0; k < nodes; ++k) {
      v1::ProgramNode n;
      n.set_id("n" + std::to_string(k));
      if (!ids.empty() && U() < 0.9)
        n.add_deps(ids[static_cast<size_t>(I(0, static_cast<int>(ids.size()) - 1))]);
      bool tool = k % 2 == 1 && U() < 0.8;
      if (tool) {
        n.set_kind(v1::TOOL);
        n.set_tool_name(U() < 0.5 ? "search" : "exec");
        n.mutable_hints()->set_expected_duration_ms(I(10, 5000));
        n.set_side_effect(U() < 0.3);
        if (n.side_effect() && U() < 0.5) n.set_idempotency_key("k" + std::to_string(k));
      } else {
        n.set_kind(v1::LLM);
        n.set_model_id(U() < 0.5 ? "m1" : "m2");
        auto* r = n.add_cache_refs();
        r->set_context(U() < 0.8 ? "main" : "side");
        r->set_mode(k == 0 ? v1::CacheRef::CREATE : v1::CacheRef::EXTEND);
        // A call continuing its context from a prefix (the core and the engine cut it).
        if (k > 0 && U() < 0.3) r->set_keep_tokens(I(1, 4000));
        n.mutable_hints()->set_prompt_tokens(I(16, 6000));
        n.mutable_hints()->set_extend_tokens(I(16, 2000));
        n.mutable_hints()->set_max_output_tokens(I(1, 64));
      }
      ids.push_back(n.id());
      if (k > 0 && U() < 0.2) {
        late->push_back(n);
      } else {
        *w.add_nodes() = n;
      }
      specs[w.id() + "/" + n.id()] = n;
    }
    return w;
  }
};

// Transfers carried out on net_budget grants, over all seeds (the path must be exercised).
int g_budgeted_transfers = 0;

std::string RunSeed(uint64_t seed) {
  PropertyHarness h(seed * 0x9E3779B97F4A7C15ULL + 1);
  VirtualEventLoop loop;
  int workers = h.I(1, 3);
  SimulatedFabric::Options fo;
  fo.workers = workers;
  fo.max_grants[2] = h.I(1, 4);
  SimulatedFabric fabric(fo);
  for (int w = 0; w < workers; ++w) fabric.SetPcieLoad(w, h.U() < 0.3 ? 0.9 : 0.0);
  FlatCost cost;
  FlatStepCost step_cost;
  CoreOptions o;
  o.workers = workers;
  EngineLimits limits;
  limits.block_tokens = h.U() < 0.5 ? 16 : 1;
  limits.max_num_seqs = h.I(1, 8);
  limits.max_num_batched_tokens = h.U() < 0.5 ? 8192 : 512;
  limits.pool_blocks = (static_cast<int64_t>(h.I(1, 4)) << 30) /
                       (limits.block_tokens * static_cast<int64_t>(cost.KvBytesPerToken()));
  o.hbm_bytes_per_worker =
      static_cast<uint64_t>(limits.pool_blocks * limits.block_tokens) * cost.KvBytesPerToken();
  o.max_num_seqs = limits.max_num_seqs;
  o.kv_block_tokens = limits.block_tokens;
  o.admission_watermark = h.U() < 0.5 ? 0.01 : 0;
  o.retry_credit_capacity = h.I(1, 10);
  std::unique_ptr<Policy> policy = MakePolicy(h.U() < 0.7 ? "switchyard" : "keep-during-tool");
  // A third of the seeds run on net_budget's planner and link budgets instead of the
  // simulated fabric (grants then come from token buckets and can be refused).
  std::unique_ptr<NetBudgetEnvironment> env;
  TransferPlanner* planner = &fabric;
  GrantIssuer* grants = &fabric;
  if (h.U() < 0.33) {
    ClusterShape shape{.nodes = workers, .workers_per_node = 1};
    auto topo = net_budget::Topology::FromProto(BuildClusterTopology(shape).value());
    if (!topo.ok()) return "topology: " + topo.status().ToString();
    env = NetBudgetEnvironment::Create(std::move(*topo), ClusterLocationMap(shape), &loop).value();
    planner = env.get();
    grants = env.get();
  }
  Core core(o, policy.get(), planner, grants, &cost);
  double llm_fail = h.U() < 0.5 ? 0.1 : 0.0, tool_fail = h.U() < 0.5 ? 0.2 : 0.0;
  double xfer_fail = h.U() < 0.5 ? 0.1 : 0.0;
  SimulatedEngine::Options eo;
  eo.fault = [&](const std::string&) {
    return h.U() < llm_fail ? Status::Unavailable("injected engine fault") : Status::OK();
  };
  std::vector<std::unique_ptr<SimulatedEngine>> engines;
  std::vector<Engine*> engine_ptrs;
  for (int w = 0; w < workers; ++w) {
    engines.push_back(std::make_unique<SimulatedEngine>(&loop, w, limits, &step_cost, eo));
    engine_ptrs.push_back(engines.back().get());
  }
  SimulatedToolWaiter tools(&loop, [&](const std::string&, const v1::ProgramNode& n) {
    double scale = 0.2 + 2.0 * h.U();
    return ToolOutcome{
        Millis(static_cast<int64_t>(n.hints().expected_duration_ms() * scale)),
        h.U() < tool_fail ? Status::Unavailable("injected tool fault") : Status::OK()};
  });
  SimulatedKvMover::DurationFn planned;
  if (env) planned = [&env](const Command& c) { return env->PlannedDuration(c.grant.id); };
  SimulatedKvMover mover(
      &loop, planner,
      [&](const Command&) {
        return h.U() < xfer_fail ? Status::Unavailable("injected transfer fault") : Status::OK();
      },
      planned);
  Runtime rt(&loop, &core, engine_ptrs, &tools, &mover);
  // Outputs end before the cap half the time (the scheduler is not told).
  rt.SetOutputOracle([&](const std::string&, const v1::ProgramNode& n) -> int64_t {
    return h.U() < 0.5
               ? h.I(1, static_cast<int>(std::max<int64_t>(1, n.hints().max_output_tokens())))
               : 0;
  });
  std::set<int> lost, rejoined;
  uint64_t block_bytes = static_cast<uint64_t>(limits.block_tokens) * cost.KvBytesPerToken();
  rt.SetAfterCommands([&](Time now) {
    for (int w = 0; w < workers; ++w) {
      // A lost worker's engine keeps what it held until it rejoins (Reset: empty again).
      bool gone = lost.count(w) && !rejoined.count(w);
      if (gone || !core.alive(w) || !h.failure.empty()) continue;
      uint64_t held =
          static_cast<uint64_t>(engines[static_cast<size_t>(w)]->blocks_used()) * block_bytes;
      if (held != core.hbm_used(w) && std::getenv("SY_LEDGER_DEBUG"))
        for (const auto& [key, spec] : h.specs)
          for (const v1::CacheRef& r : spec.cache_refs()) {
            std::string ck = key.substr(0, key.find('/')) + "/" + r.context();
            std::printf("ctx %s engine %lld core %lld (%s)\n", ck.c_str(),
                        static_cast<long long>(engines[static_cast<size_t>(w)]->context_tokens(ck)),
                        static_cast<long long>(core.ContextTokens(ck)), key.c_str());
          }
      if (held != core.hbm_used(w))
        h.Fail("ledger at " + std::to_string(now.seconds()) + " s on worker " + std::to_string(w) +
               ": engine holds " + std::to_string(held) + " bytes, core " +
               std::to_string(core.hbm_used(w)));
    }
  });
  const char* trace = std::getenv("SY_PROPERTY_TRACE");
  bool tracing = trace && std::strtoull(trace, nullptr, 10) == seed;
  rt.SetObserver([&](const Event& e, const Commands& c, Time now) {
    if (tracing) {
      std::printf("%.4f %s %s/%s w=%d x=%llu %s\n", now.seconds(), EventKindName(e.kind),
                  e.workflow_id.c_str(), e.node_id.c_str(), e.worker,
                  static_cast<unsigned long long>(e.transfer_id), e.status.ToString().c_str());
      for (const std::string& line : ToStrings(c)) std::printf("    %s\n", line.c_str());
    }
    h.Observe(core, workers, e, c);
    if (e.kind == EventKind::kDrainWorker) g_drain_evictions += c.list.size();
    // Nothing is placed, prefetched or demoted onto a draining worker.
    for (const Command& cmd : c.list) {
      int to = cmd.kind == CommandKind::kPlace ? cmd.worker
               : (cmd.kind == CommandKind::kPrefetch || cmd.kind == CommandKind::kDemote) &&
                       (cmd.dst.tier == Tier::kHbm || cmd.dst.tier == Tier::kPeer)
                   ? cmd.dst.worker
                   : -1;
      if (to >= 0 && core.draining(to))
        h.Fail(std::string(CommandKindName(cmd.kind)) + " onto draining worker " +
               std::to_string(to) + " at " + std::to_string(now.seconds()) + " s");
    }
    if (env)
      for (const Command& cmd : c.list)
        g_budgeted_transfers +=
            cmd.kind == CommandKind::kDemote || cmd.kind == CommandKind::kPrefetch;
  });

  int n = h.I(1, 4);
  for (int i = 0; i < n; ++i) {
    std::vector<v1::ProgramNode> late;
    v1::Workflow w = h.RandomWorkflow(i, 2, &late);
    h.submitted.insert(w.id());
    Time at = Time::FromMillis(h.I(0, 2000));
    loop.PostAt(at, [&rt, w]() { rt.Submit(w); });
    Time close_at = at + Millis(h.I(0, 3000));
    for (const v1::ProgramNode& node : late)
      loop.PostAt(close_at, [&rt, id = w.id(), node]() { rt.Append(id, node); });
    loop.PostAt(close_at + Millis(1), [&rt, id = w.id()]() { rt.Close(id); });
    if (h.U() < 0.05)
      loop.PostAt(Time::FromMillis(h.I(0, 8000)), [&rt, id = w.id()]() { rt.Cancel(id); });
  }
  bool lose = workers > 1 && h.U() < 0.3;
  // A drain of a random worker; undone later half the time, and always when a worker is
  // also lost (one lost and one drained could leave nothing to place on).
  int drained = workers > 1 && h.U() < 0.3 ? h.I(0, workers - 1) : -1;
  if (drained >= 0) {
    Time at = Time::FromMillis(h.I(0, 6000));
    loop.PostAt(at, [&rt, drained]() { rt.Drain(drained, true); });
    if (lose || h.U() < 0.5) {
      loop.PostAt(at + Millis(h.I(0, 3000)), [&rt, &drained, d = drained]() {
        rt.Drain(d, false);
        drained = -1;
      });
    }
  }
  if (lose) {
    Time at = Time::FromMillis(h.I(0, 6000));
    int w = h.I(0, workers - 1);
    loop.PostAt(at, [&rt, &lost, w]() {
      lost.insert(w);
      rt.WorkerLost(w);
    });
    // Half the time it comes back (a new incarnation, empty) and is placed on again.
    if (h.U() < 0.5)
      loop.PostAt(at + Millis(h.I(0, 3000)), [&rt, &rejoined, w]() {
        rejoined.insert(w);
        rt.WorkerJoined(w);
      });
  }
  if (h.U() < 0.3)
    loop.PostAt(Time::FromMillis(h.I(0, 6000)), [&rt]() { rt.ModelEpochChanged("m1", 7); });
  loop.RunUntil(Time::FromSeconds(3600));
  if (!h.failure.empty()) return h.failure;
  for (const std::string& id : h.submitted) {
    auto it = rt.outcomes().find(id);
    if (it == rt.outcomes().end()) {
      if (tracing)
        for (const auto& [key, spec] : h.specs)
          std::printf("%s kind=%d deps=%s\n", key.c_str(), spec.kind(),
                      spec.deps_size() ? spec.deps(0).c_str() : "-");
      return "workflow " + id + " never ended (queued " + std::to_string(core.queued_nodes()) + ")";
    }
    if (it->second.kind == CommandKind::kFail && it->second.reason.empty())
      return "workflow " + id + " failed without a reason";
  }
  if (fabric.outstanding_grants() != 0 || (env && env->outstanding_grants() != 0))
    return "grants leaked";
  if (drained >= 0 && core.alive(drained) && !core.drained(drained))
    return "worker " + std::to_string(drained) + " is still draining at the end";
  for (int w = 0; w < workers; ++w) {
    if (core.hbm_used(w) != 0) return "HBM still held at the end on worker " + std::to_string(w);
    if ((!lost.count(w) || rejoined.count(w)) &&
        engines[static_cast<size_t>(w)]->blocks_used() != 0)
      return "engine blocks still held at the end on worker " + std::to_string(w);
  }
  return "";
}

TEST(RuntimeProperty, RandomWorkloadsAndFaultsHoldTheInvariants) {
  int seeds = SeedCount();
  int failures = 0;
  for (int s = 0; s < seeds && failures < 5; ++s) {
    std::string why = RunSeed(static_cast<uint64_t>(s));
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << s << ": " << why;
    }
  }
  RecordProperty("seeds", seeds);
  RecordProperty("budgeted_transfers", g_budgeted_transfers);
  RecordProperty("drain_evictions", g_drain_evictions);
  EXPECT_GT(g_drain_evictions, seeds / 500) << "drains hardly ever had a context to move off";
  EXPECT_GT(g_budgeted_transfers, seeds / 200) << "the net_budget path was hardly exercised";
}

}  // namespace
}  // namespace switchyard::executors
