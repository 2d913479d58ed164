#include "replay/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "base/virtual_event_loop.h"
#include "executors/model_cost.h"
#include "executors/runtime.h"
#include "executors/simulated.h"
#include "executors/simulated_engine.h"
#include "executors/stack.h"
#include "executors/step_cost.h"
#include "net_budget/topology.h"
#include "replay/cluster.h"
#include "replay/internal/collector.h"
#include "scheduler/net_budget_env.h"
#include "scheduler/reference_policies.h"

namespace switchyard::replay {
namespace {

using internal::Collector;
using internal::Key;
using internal::PendingWorkflow;

using scheduler::Command;
using scheduler::CommandKind;
using scheduler::Event;
using scheduler::EventKind;
using scheduler::Location;
using scheduler::Tier;

// Appends `batch` in an order where every dep is already known to the runtime.
void AppendBatch(executors::Runtime* rt, const std::string& wf, std::vector<v1::ProgramNode> batch,
                 std::set<std::string>* known) {
  while (!batch.empty()) {
    bool progress = false;
    for (size_t i = 0; i < batch.size();) {
      bool ready = true;
      for (const std::string& d : batch[i].deps()) {
        bool in_batch = std::any_of(batch.begin(), batch.end(),
                                    [&](const v1::ProgramNode& n) { return n.id() == d; });
        if (in_batch && !known->count(d)) ready = false;
      }
      if (ready) {
        known->insert(batch[i].id());
        rt->Append(wf, batch[i]);
        batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(i));
        progress = true;
      } else {
        ++i;
      }
    }
    if (!progress) {  // a cycle inside the batch: hand it over as is, the core rejects it
      for (const v1::ProgramNode& n : batch) rt->Append(wf, n);
      return;
    }
  }
}

executors::EngineLimits EngineLimitsOf(const v1::ReplayCluster& c, const ClusterShapeInfo& shape,
                                       uint64_t kv_bytes_per_token) {
  executors::EngineLimits l;
  if (c.max_num_seqs() > 0) l.max_num_seqs = static_cast<int>(c.max_num_seqs());
  if (c.max_num_batched_tokens() > 0) l.max_num_batched_tokens = c.max_num_batched_tokens();
  l.max_chunk_tokens = c.chunk_tokens();  // 0: only the step's budget
  if (c.kv_block_tokens() > 0) l.block_tokens = c.kv_block_tokens();
  l.pool_blocks = static_cast<int64_t>(
      shape.kv_bytes_per_worker / (static_cast<uint64_t>(l.block_tokens) * kv_bytes_per_token));
  return l;
}

Result<std::unique_ptr<executors::StepCostModel>> MakeStepCost(const v1::ReplayCluster& c,
                                                               const std::string& dir) {
  if (!c.step_table().empty()) {
    std::string path = c.step_table();
    if (path[0] != '/' && !dir.empty()) path = dir + "/" + path;
    SY_ASSIGN_OR_RETURN(executors::TableStepCost t, executors::TableStepCost::FromFile(path));
    return std::unique_ptr<executors::StepCostModel>(
        std::make_unique<executors::TableStepCost>(std::move(t)));
  }
  Duration overhead = c.step_overhead_s() > 0 ? Seconds(c.step_overhead_s()) : Millis(2);
  SY_ASSIGN_OR_RETURN(executors::RooflineStepCost r,
                      executors::RooflineStepCost::Create(c.model(), c.gpu(), overhead));
  return std::unique_ptr<executors::StepCostModel>(
      std::make_unique<executors::RooflineStepCost>(std::move(r)));
}

// WorkflowRecord::tool_s and llm_calls of a trace record.
void CountToolsAndCalls(const v1::TraceRecord& rec, WorkflowRecord* wr) {
  std::set<std::string> tools;
  for (const v1::ProgramNode& n : rec.workflow().nodes()) {
    if (n.kind() == v1::TOOL) tools.insert(n.id());
    if (n.kind() == v1::LLM) ++wr->llm_calls;
  }
  int64_t tool_ms = 0;
  for (const v1::NodeActual& a : rec.actuals())
    if (tools.count(a.node_id())) tool_ms += a.duration_ms();
  wr->tool_s = static_cast<double>(tool_ms) / 1e3;
}

Result<PolicyReport> FinishReport(const std::vector<v1::TraceRecord>& trace,
                                  const std::map<std::string, executors::WorkflowOutcome>& outcomes,
                                  Collector& col, const ReplayOptions& options, PolicyReport* rep) {
  double first = trace.empty() ? 0 : 1e300, last_end = 0;
  int64_t with_deadline = 0, missed = 0;
  for (const v1::TraceRecord& rec : trace) {
    double arrival = static_cast<double>(rec.arrival_ms()) / 1e3;
    first = std::min(first, arrival);
    int64_t dl = rec.workflow().deadline_ms();
    with_deadline += dl > 0 ? 1 : 0;
    auto it = outcomes.find(rec.workflow().id());
    WorkflowRecord wr{rec.workflow().id(), arrival, -1, "unfinished",
                      dl > 0 ? static_cast<double>(dl) / 1e3 : -1.0};
    CountToolsAndCalls(rec, &wr);
    if (it != outcomes.end()) {
      wr.end_s = it->second.at.seconds();
      wr.state = it->second.kind == CommandKind::kComplete
                     ? (it->second.reason.empty() ? "completed" : "cancelled")
                     : "failed";
    }
    rep->workflow_records.push_back(std::move(wr));
    if (it == outcomes.end()) {
      ++rep->unfinished;
      missed += dl > 0 ? 1 : 0;
      continue;
    }
    double end = it->second.at.seconds();
    last_end = std::max(last_end, end);
    if (it->second.kind == CommandKind::kComplete && it->second.reason.empty()) {
      ++rep->completed;
      rep->jct_s.push_back(end - arrival);
      if (dl > 0 && it->second.at.millis() > dl) ++missed;
    } else {
      ++rep->failed;
      missed += dl > 0 ? 1 : 0;
    }
  }
  std::sort(rep->jct_s.begin(), rep->jct_s.end());
  std::sort(rep->ttft_s.begin(), rep->ttft_s.end());
  std::sort(rep->tbt_s.begin(), rep->tbt_s.end());
  rep->tbt_p50_s = Percentile(rep->tbt_s, 50);
  rep->tbt_p99_s = Percentile(rep->tbt_s, 99);
  double sum = 0;
  for (double j : rep->jct_s) sum += j;
  rep->jct_mean_s = rep->jct_s.empty() ? 0 : sum / static_cast<double>(rep->jct_s.size());
  rep->jct_p50_s = Percentile(rep->jct_s, 50);
  rep->jct_p95_s = Percentile(rep->jct_s, 95);
  rep->jct_p99_s = Percentile(rep->jct_s, 99);
  rep->ttft_p50_s = Percentile(rep->ttft_s, 50);
  rep->ttft_p99_s = Percentile(rep->ttft_s, 99);
  rep->deadline_miss_rate =
      with_deadline > 0 ? static_cast<double>(missed) / static_cast<double>(with_deadline) : 0;
  double span = last_end - first;
  rep->throughput_wf_per_min = span > 0 ? static_cast<double>(rep->completed) / (span / 60.0) : 0;
  rep->hbm_util_mean = col.hbm.Mean(first, last_end);
  rep->makespan_s = last_end;
  int n = std::max(1, options.series_points);
  double end = last_end > 0 ? last_end : 1;
  rep->hbm_util = col.hbm.Buckets(end, n);
  for (const auto& [t, name, bytes] : col.moved) {
    Series& s = rep->link_bytes[name];
    if (s.values.empty()) {
      s.bucket_s = end / n;
      s.values.assign(static_cast<size_t>(n), 0);
    }
    size_t k = std::min(static_cast<size_t>(n - 1), static_cast<size_t>(t / s.bucket_s));
    s.values[k] += static_cast<double>(bytes);
  }
  // Conservation: bytes by class = bytes of every transfer command that completed.
  uint64_t by_class = 0, inflight = 0;
  for (const auto& [cls, b] : rep->bytes_moved_by_class) by_class += b;
  for (const auto& [id, c] : col.inflight) inflight += c.bytes;
  if (by_class != col.completed_bytes ||
      col.completed_bytes + col.failed_bytes + inflight != col.command_bytes)
    rep->bytes_conserved = false;
  return std::move(*rep);
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[i];
}

namespace {

// The stack of a replay: the cluster's topology and budgets, and a core planning with the
// engines' exact pool (whole blocks: the core admits against what the engines hold).
executors::StackSpec ReplayStackSpec(const v1::ReplayCluster& cluster,
                                     const ClusterShapeInfo& shape,
                                     const executors::EngineLimits& limits,
                                     const std::string& policy_name, const ReplayOptions& options,
                                     const executors::RooflineCostModel* cost) {
  executors::StackSpec spec;
  spec.policy = policy_name;
  spec.shape = ToClusterShape(cluster, shape);
  spec.cost = cost;
  const uint64_t block_bytes = static_cast<uint64_t>(limits.block_tokens) * cost->KvBytesPerToken();
  scheduler::CoreOptions& co = spec.core;
  co.workers = shape.workers;
  co.hbm_bytes_per_worker = static_cast<uint64_t>(limits.pool_blocks) * block_bytes;
  co.max_num_seqs = limits.max_num_seqs;
  co.kv_block_tokens = limits.block_tokens;
  co.admission_watermark = cluster.admission_watermark();  // 0: the default
  if (cluster.host_bytes_per_node() > 0)
    co.host_bytes_per_worker = cluster.host_bytes_per_node() / shape.workers_per_node;
  if (cluster.disk_bytes_per_node() > 0)
    co.disk_bytes_per_worker = cluster.disk_bytes_per_node() / shape.workers_per_node;
  if (cluster.default_max_output_tokens() > 0)
    co.default_max_output_tokens = cluster.default_max_output_tokens();
  co.share_prefixes = options.shared_prefixes;
  co.disaggregation = options.disaggregation;
  if (cluster.prefill_workers() > 0) {
    co.worker_roles.assign(static_cast<size_t>(shape.workers), scheduler::WorkerRole::kDecode);
    for (uint32_t w = 0; w < cluster.prefill_workers(); ++w)
      co.worker_roles[w] = scheduler::WorkerRole::kPrefill;
  }
  return spec;
}

// The oracle's foresight (scheduler/foresight.h): the trace's recorded tool durations, plus
// the cluster's tool overhead as the simulated tools take them, and output lengths. The core
// reads it for the oracle policy only.
class TraceForesight final : public scheduler::Foresight {
 public:
  TraceForesight(const std::map<std::string, const v1::NodeActual*>* actual, Duration overhead)
      : actual_(actual), overhead_(overhead) {}
  std::optional<Duration> ToolDuration(const std::string& wf,
                                       const std::string& node) const override {
    const v1::NodeActual* a = Find(wf, node);
    if (a == nullptr) return std::nullopt;
    return Millis(a->duration_ms()) + overhead_;
  }
  std::optional<int64_t> OutputTokens(const std::string& wf,
                                      const std::string& node) const override {
    const v1::NodeActual* a = Find(wf, node);
    if (a == nullptr || a->output_tokens() <= 0) return std::nullopt;
    return a->output_tokens();
  }

 private:
  const v1::NodeActual* Find(const std::string& wf, const std::string& node) const {
    auto it = actual_->find(Key(wf, node));
    return it == actual_->end() ? nullptr : it->second;
  }
  const std::map<std::string, const v1::NodeActual*>* actual_;
  Duration overhead_;
};

// One replay of a trace under one policy, in virtual time.
class Replayer {
 public:
  Replayer(const std::vector<v1::TraceRecord>& trace, const v1::ReplayCluster& cluster,
           const ReplayOptions& options)
      : trace_(trace), cluster_(cluster), options_(options) {}
  ~Replayer() { stack_.runtime.reset(); }  // before the executors it borrows

  Result<PolicyReport> Run(const std::string& policy_name) {
    SY_ASSIGN_OR_RETURN(ClusterShapeInfo shape, DeriveShape(cluster_));
    SY_ASSIGN_OR_RETURN(executors::RooflineCostModel cost,
                        executors::RooflineCostModel::Create(cluster_.model(), cluster_.gpu()));
    cost_ = std::make_unique<executors::RooflineCostModel>(std::move(cost));
    const executors::EngineLimits limits =
        EngineLimitsOf(cluster_, shape, cost_->KvBytesPerToken());
    executors::StackSpec spec =
        ReplayStackSpec(cluster_, shape, limits, policy_name, options_, cost_.get());
    spec.core.foresight = &foresight_;  // read for the oracle only
    SY_ASSIGN_OR_RETURN(stack_, executors::BuildStack(std::move(spec), &loop_));
    SY_ASSIGN_OR_RETURN(step_cost_, MakeStepCost(cluster_, options_.cluster_dir));
    rep_.policy = policy_name;
    rep_.cluster = cluster_.name();
    rep_.seed = options_.seed;
    rep_.workflows = static_cast<int64_t>(trace_.size());
    rep_.shared_prefixes = options_.shared_prefixes;
    col_.cost = cost_.get();
    col_.core = stack_.core.get();
    col_.workers = shape.workers;
    col_.env = stack_.env.get();
    col_.capacity = static_cast<double>(shape.kv_bytes_per_worker);
    col_.r = &rep_;
    col_.block_bytes = static_cast<uint64_t>(limits.block_tokens) * cost_->KvBytesPerToken();
    SY_RETURN_IF_ERROR(IndexTrace());
    StartRuntime(shape.workers, limits);
    const Time last_arrival = ScheduleArrivals();
    auto wall0 = std::chrono::steady_clock::now();
    Time limit =
        options_.drain_limit_s > 0 ? last_arrival + Seconds(options_.drain_limit_s) : Time::Max();
    if (!trace_.empty()) loop_.RunUntil(limit);
    rep_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return Finish();
  }

 private:
  // Every record's nodes and recorded actuals, by workflow and "wf/node".
  Status IndexTrace() {
    for (const v1::TraceRecord& rec : trace_) {
      const std::string& id = rec.workflow().id();
      if (id.empty()) return Status::InvalidArgument("trace record without a workflow id");
      if (col_.records.count(id)) return Status::InvalidArgument("duplicate workflow id " + id);
      col_.records[id] = &rec;
      for (const v1::ProgramNode& n : rec.workflow().nodes()) col_.nodes[id][n.id()] = &n;
      for (const v1::NodeActual& a : rec.actuals()) actual_[Key(id, a.node_id())] = &a;
    }
    return Status::OK();
  }

  // A recorded failure, once per node: the first attempt fails, a retry runs.
  Status RecordedFault(const std::string& key) {
    auto it = actual_.find(key);
    return it != actual_.end() && it->second->fails() && !attempts_[key]++
               ? Status::Unavailable("recorded failure (trace)")
               : Status::OK();
  }

  // The simulated engines, tools and mover, and the runtime over them.
  void StartRuntime(int workers, const executors::EngineLimits& limits) {
    executors::SimulatedEngine::Options eo;
    eo.fault = [this](const std::string& key) { return RecordedFault(key); };
    std::vector<executors::Engine*> engines;
    for (int w = 0; w < workers; ++w) {
      engines_.push_back(
          std::make_unique<executors::SimulatedEngine>(&loop_, w, limits, step_cost_.get(), eo));
      engines.push_back(engines_.back().get());
    }
    col_.engines = engines;
    const Duration tool_overhead = Seconds(cluster_.tool_overhead_s());
    tools_ = std::make_unique<executors::SimulatedToolWaiter>(
        &loop_, [this, tool_overhead](const std::string& key, const v1::ProgramNode& n) {
          executors::ToolOutcome o;
          auto it = actual_.find(key);
          o.duration = (it != actual_.end() ? Millis(it->second->duration_ms())
                                            : Millis(n.hints().expected_duration_ms())) +
                       tool_overhead;  // ReplayCluster.tool_overhead_s
          o.status = RecordedFault(key);
          return o;
        });
    // KV moves take the duration net_budget's planner gave when the grant was issued.
    scheduler::NetBudgetEnvironment* env = stack_.env.get();
    mover_ = std::make_unique<executors::SimulatedKvMover>(
        &loop_, env, executors::SimulatedKvMover::FaultFn{},
        [env](const Command& c) { return env->PlannedDuration(c.grant.id); });
    rt_ = stack_.StartRuntime(&loop_, std::move(engines), tools_.get(), mover_.get());
    // The recorded output length: only the engine sees it (it stops there); policies see
    // the cap. Without a record, the engine decodes to the cap.
    rt_->SetOutputOracle([this](const std::string& wf, const v1::ProgramNode& n) -> int64_t {
      auto it = actual_.find(Key(wf, n.id()));
      return it != actual_.end() ? it->second->output_tokens() : 0;
    });
    rt_->SetStepObserver([this](const executors::StepReport& s) {
      rep_.prefill_tokens += static_cast<uint64_t>(s.prefill_tokens);
    });
    if (options_.check_ledger)
      rt_->SetAfterCommands([this](Time now) { col_.CheckLedger(now.seconds()); });
    rt_->SetObserver(
        [this](const Event& e, const scheduler::Commands& out, Time now) { Observe(e, out, now); });
  }

  void Observe(const Event& e, const scheduler::Commands& out, Time now) {
    col_.OnEvent(e, out, now);
    for (const Command& c : out.list)
      if (c.kind == CommandKind::kComplete || c.kind == CommandKind::kFail) ++ended_;
    if ((e.kind == EventKind::kLlmFinished || e.kind == EventKind::kToolFinished) && e.status.ok())
      Reveal(e.workflow_id, e.node_id, now);
    if (ended_ >= trace_.size()) loop_.Stop();
  }

  // The nodes the trace revealed only after `node` succeeded, and the workflow's close
  // once none is held back any more.
  void Reveal(const std::string& wf, const std::string& node, Time now) {
    auto pit = pending_.find(wf);
    if (pit == pending_.end()) return;
    PendingWorkflow& p = pit->second;
    auto hit = p.held.find(node);
    if (hit == p.held.end()) return;
    std::vector<v1::ProgramNode> batch = std::move(hit->second);
    p.held.erase(hit);
    p.held_count -= batch.size();
    bool close = p.held_count == 0 && !p.closed;
    if (close) p.closed = true;
    // The agent's reaction (ReplayCluster.call_overhead_s): the batch appears that long
    // after its predecessor succeeded; the Close follows it.
    auto reveal = [this, wf, batch = std::move(batch), close]() mutable {
      AppendBatch(rt_, wf, std::move(batch), &known_[wf]);
      if (close) rt_->Close(wf);
    };
    const Duration call_overhead = Seconds(cluster_.call_overhead_s());
    if (call_overhead > Duration(0))
      loop_.PostAt(now + call_overhead, std::move(reveal));
    else
      reveal();
  }

  // Each record's workflow at its arrival, less the nodes revealed later. Returns the
  // last arrival.
  Time ScheduleArrivals() {
    Time last_arrival{0};
    for (size_t i = 0; i < trace_.size(); ++i) {
      Time at = Time::FromMillis(trace_[i].arrival_ms());
      last_arrival = std::max(last_arrival, at);
      loop_.PostAt(at, [this, i]() { Arrive(i); });
    }
    return last_arrival;
  }

  void Arrive(size_t i) {
    const v1::TraceRecord& r = trace_[i];
    std::map<std::string, const v1::NodeActual*> reveal;
    for (const v1::NodeActual& a : r.actuals())
      if (!a.revealed_after().empty()) reveal[a.node_id()] = &a;
    v1::Workflow w = r.workflow();
    w.clear_nodes();
    PendingWorkflow p;
    std::set<std::string>& k = known_[w.id()];
    for (const v1::ProgramNode& n : r.workflow().nodes()) {
      auto it = reveal.find(n.id());
      if (it == reveal.end()) {
        *w.add_nodes() = n;
        k.insert(n.id());
      } else {
        p.held[it->second->revealed_after()].push_back(n);
        ++p.held_count;
      }
    }
    rt_->Submit(std::move(w));
    if (p.held_count == 0) {
      p.closed = true;
      rt_->Close(r.workflow().id());
    }
    pending_[r.workflow().id()] = std::move(p);
    if (options_.progress && (i % 64 == 0 || i + 1 == trace_.size()))
      options_.progress(static_cast<double>(i + 1) / static_cast<double>(trace_.size()));
  }

  Result<PolicyReport> Finish() {
    rep_.events = rt_->events_handled();
    for (const auto& t : stack_.env->Traffic()) {
      uint64_t b = 0;
      for (uint64_t x : t.bytes) b += x;
      if (b > 0) rep_.bytes_moved_by_link[t.link] = b;
    }
    rep_.events_per_s = rep_.wall_s > 0 ? static_cast<double>(rep_.events) / rep_.wall_s : 0;
    const scheduler::PrefixStats& ps = stack_.core->prefix_stats();
    rep_.prefill_tokens_saved = static_cast<uint64_t>(ps.hit_tokens);
    rep_.prefix_hits = ps.hits;
    rep_.prefix_builds = ps.builds;
    rep_.prefix_evictions = ps.evictions;
    const scheduler::PdStats& pd = stack_.core->pd_stats();
    rep_.disaggregation = scheduler::DisaggregationName(options_.disaggregation);
    rep_.pd_calls = pd.calls;
    rep_.pd_disaggregated = pd.disaggregated;
    rep_.pd_handoffs = pd.handoffs;
    rep_.pd_share = pd.calls > 0 ? static_cast<double>(pd.disaggregated) / pd.calls : 0;
    rep_.pd_moves = pd.moves;
    rep_.pd_bytes_moved = pd.bytes_moved;
    rep_.pd_recomputed = pd.recomputed_on_decode;
    return FinishReport(trace_, rt_->outcomes(), col_, options_, &rep_);
  }

  const std::vector<v1::TraceRecord>& trace_;
  const v1::ReplayCluster& cluster_;
  const ReplayOptions& options_;
  VirtualEventLoop loop_;  // first: destroyed last, after everything that posts to it
  std::unique_ptr<executors::RooflineCostModel> cost_;
  executors::Stack stack_;
  std::unique_ptr<executors::StepCostModel> step_cost_;
  std::vector<std::unique_ptr<executors::SimulatedEngine>> engines_;
  std::unique_ptr<executors::SimulatedToolWaiter> tools_;
  std::unique_ptr<executors::SimulatedKvMover> mover_;
  executors::Runtime* rt_ = nullptr;  // stack_.runtime
  PolicyReport rep_;
  Collector col_;
  std::map<std::string, const v1::NodeActual*> actual_;  // "wf/node"
  TraceForesight foresight_{&actual_, Seconds(cluster_.tool_overhead_s())};
  std::map<std::string, int> attempts_;  // recorded failures taken, "wf/node"
  std::map<std::string, PendingWorkflow> pending_;
  std::map<std::string, std::set<std::string>> known_;
  size_t ended_ = 0;
};

}  // namespace

Result<PolicyReport> RunReplay(const std::vector<v1::TraceRecord>& trace,
                               const v1::ReplayCluster& cluster, const std::string& policy_name,
                               const ReplayOptions& options) {
  return Replayer(trace, cluster, options).Run(policy_name);
}

}  // namespace switchyard::replay
