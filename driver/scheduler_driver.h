// SchedulerDriver: the service's running scheduler (docs/design.md "Data flow", service side).
//
// It owns a real scheduler::Core driven by an executors::Runtime on its own
// base::AsioEventLoop thread, with the embedded defaults: a simulated engine
// (roofline cost model of Llama-3.1-8B on an H100, named "simulated engine"), or,
// when LLM results are reported by an engine, a ReportedEngine per worker; a ReportedToolWaiter
// (tool nodes wait for the client's reports, no timeout); the real data plane for KV moves:
// a scheduler::NetBudgetEnvironment (net_budget planner and link budgets) over a loopback
// topology (one node, scheduler::BuildClusterTopology with the worker count) as the core's
// TransferPlanner and GrantIssuer, and an executors::TieredKvMover that moves each
// context's blocks through a kv_tiers::BlockManager with an emulated-HBM arena per worker,
// a host-memory arena and a RocksDB disk tier under <data-dir>/kv. The tiers are emulated
// at 1/kv_bytes_scale of the scheduler's bytes (named so in logs and JSON), sized from the
// config or documented defaults (never from this machine); the disk tier is wiped at start
// (restored workflows recompute).
//
// The Service forwards every acknowledged mutation (submit, append, event, close, cancel)
// here; the driver posts it to the loop. An observer on the loop keeps a mirror, under a
// mutex, of what readers may see: each context's location (tier, worker, bytes), the
// decisions per workflow (bounded), HBM use, grants in flight per link and class, and
// counters (decisions by kind, bytes moved by destination tier). Readers never touch the
// Core, the mover or the BlockManager; FillCluster reads the tiers' occupancy and the link
// budgets directly (both thread-safe) and the topology (immutable). Callbacks to the Service (a
// simulated LLM node was placed or ended, the scheduler failed a workflow, any decision for an
// engine listener) run on the loop thread.
//
// Thread-safety: public methods are thread-safe. The destructor stops the loop thread;
// callbacks must not destroy the driver.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/time.h"
#include "driver/engine_registry.h"
#include "driver/scheduler_driver_metrics.h"
#include "driver/timeline_recorder.h"
#include "executors/engine.h"
#include "executors/engine_kv.h"
#include "executors/generation.h"
#include "executors/stack.h"
#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/link_file.pb.h"
#include "proto/switchyard/v1/model.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "scheduler/disaggregation.h"
#include "scheduler/events.h"
#include "scheduler/joined_topology.h"

namespace switchyard {
class AsioEventLoop;
class EventLoop;
}  // namespace switchyard
namespace switchyard::executors {
struct EngineLimits;
struct StepReport;
class Runtime;
class Engine;
class StepCostModel;
class KvMover;
class TieredKvMover;
class RooflineCostModel;
}  // namespace switchyard::executors
namespace switchyard::scheduler {
class Core;
class Policy;
class NetBudgetEnvironment;
}  // namespace switchyard::scheduler
namespace switchyard::kv_tiers {
class Tier;
class BlockManager;
struct TierOptions;
struct MoverEnv;
class MoverSet;
}  // namespace switchyard::kv_tiers
namespace switchyard::cpu_engine {
class Model;
class TokenLog;
class CpuEngine;
class Tokenizer;
}  // namespace switchyard::cpu_engine

namespace switchyard::driver {

class ReportedToolWaiter;
class ReportedEngine;

// An engine a serving stack supplies for one worker (service/embedded.h, the embedding API):
// `engine` runs the worker's LLM nodes (owned by the driver from then on); `kv` is its KV
// pool with real bytes (borrowed from the engine, e.g. an executors::RegisteredKvPool over
// the stack's own memory): demotions and prefetches then copy those bytes under the
// commit rule. Null `kv`: the engine's KV is accounting only and moves are emulated.
struct WorkerEngine {
  std::unique_ptr<executors::Engine> engine;
  executors::EngineKv* kv = nullptr;
  // An engine that computes in another process (a joined CPU worker): its pool as the KV
  // mover reaches it, through the worker's KV store (its hbm_tier_factory tier).
  std::shared_ptr<executors::RemoteEngineKv> remote_kv;
};
// Makes worker `worker`'s engine on the scheduler's loop (`loop`: the engine's EventLoop),
// with the batch limits and KV pool size the core plans with (`limits`).
using EngineFactory = std::function<Result<WorkerEngine>(EventLoop* loop, int worker,
                                                         const executors::EngineLimits& limits)>;

struct SchedulerConfig {
  bool enabled = true;
  // true: the service runs LLM nodes on its own engine (`engine`); false: an engine
  // reports them.
  bool engines_run_llm = true;
  // KV moves between workers (scheduler::CoreOptions::kv_between_workers): false in proxy
  // mode, where each worker is an upstream engine whose KV no other can read.
  bool kv_between_workers = true;
  // An engine kind (executors/engine_kind.h): "simulated", the simulated engine
  // (continuous batching timed by the roofline step cost), or "cpu", the reference CPU
  // engine (the model at `model_path` computed on the CPU, real KV bytes in a pool of
  // `kv_pool_bytes` per worker, moved for real between the tiers).
  std::string engine = "simulated";
  std::string model_path;
  // Engine cpu: how weights and KV are stored ("f32" | "bf16"; "": the model's own).
  std::string cpu_weight_dtype, cpu_kv_dtype;
  uint64_t kv_pool_bytes = 256ULL << 20;
  // Engine cpu: a host offload tier of this many bytes per worker for the prefix cache
  // (CpuEngine::Options::offload_bytes); 0: none.
  uint64_t kv_offload_bytes = 0;
  // Engine cpu: automatic prefix caching (CpuEngine::Options::prefix_caching).
  bool cpu_prefix_caching = true;
  // Engine simulated or reported: a step-time table the model is priced and timed by
  // (ServedModelSpec::step_table); "": the roofline of model_config on gpu.
  std::string step_table;
  // The served model (ServiceConfig.models): the id nodes name (empty: the model's own
  // name) and other names accepted for it; engine "simulated": the model's shape and the
  // GPU it is priced on (unset: Llama-3.1-8B on an H100-SXM, the embedded default).
  std::string model_id;
  std::vector<std::string> model_aliases;
  std::optional<v1::ModelConfig> model_config;
  std::optional<v1::GpuSpec> gpu;
  int workers = 1;  // the first model's workers (0 .. workers-1)
  // Models served beside the first, each on its own workers, numbered after the previous
  // model's. Each has its own engine, cost, KV layout and KV tiers (its part of the host and
  // disk bytes, by its share of the workers). A node runs only on its model's workers. The
  // factories below (embedder's engines, joined workers) apply to the first model's workers.
  std::vector<ServedModelSpec> extra_models;
  // Tier sizes in the scheduler's bytes (the emulated tiers hold 1/kv_bytes_scale), never
  // derived from this machine. HBM 0: the GPU's HBM less the model's weights (BF16,
  // divided by tensor_parallel): 63.9 GB for Llama-3.1-8B on an 80 GB H100.
  uint64_t hbm_bytes_per_worker = 0;
  uint64_t host_bytes = 0;  // 0: kDefaultHostBytes
  uint64_t disk_bytes = 0;  // 0: kDefaultDiskBytes
  static constexpr uint64_t kDefaultHostBytes = 64ULL << 30;
  static constexpr uint64_t kDefaultDiskBytes = 256ULL << 30;
  // With real bytes (kv_bytes_scale 1: the CPU engine, an embedder's engines) the tiers
  // hold the bytes themselves: host defaults to 8x the workers' HBM (the engines' pools),
  // disk to 32x, capped at these.
  static constexpr uint64_t kRealHostBytesCap = 4ULL << 30;
  static constexpr uint64_t kRealDiskBytesCap = 64ULL << 30;
  // Per-tenant KV quotas in each tier (the scheduler's bytes; 0: none). HBM is per worker.
  struct TierQuota {
    uint64_t hbm = 0, host = 0, disk = 0;
  };
  std::map<std::string, TierQuota> tenant_quotas;
  // The kv_tiers tiers hold 1/kv_bytes_scale of each context's bytes (emulation: the
  // simulated model writes no KV and small machines cannot hold a GPU's worth), so the
  // emulated HBM arena of a worker is hbm_bytes_per_worker / kv_bytes_scale (+ slack).
  uint64_t kv_bytes_scale = 64;
  int max_num_seqs = 256;                 // per worker (the engine's batch cap)
  int64_t max_num_batched_tokens = 8192;  // per engine step
  int64_t kv_block_tokens = 16;
  std::string policy = "switchyard";  // a scheduler::CreatePolicy spec
  // Prefill/decode disaggregation (scheduler::CoreOptions): each worker's role (shorter
  // than the workers, or empty: the rest mixed) and how calls are routed. Serve's joined
  // workers set their own role in their hello (`worker --role`).
  std::vector<scheduler::WorkerRole> worker_roles;
  scheduler::Disaggregation disaggregation = scheduler::Disaggregation::kColocated;
  // Link figures for net_budget's topology (0: the documented default of ClusterShape).
  double pcie_bytes_per_s = 0, pcie_latency_s = 0;
  double nvlink_bytes_per_s = 0, nvlink_latency_s = 0;
  double disk_bytes_per_s = 0, disk_latency_s = 0;
  // Measured link figures (`serve --links FILE`, config linksFile; scheduler/link_file.h)
  // over those: every link named gets its calibration. link_file_path names the file in
  // errors; empty: no link file.
  v1::LinkFile link_file;
  std::string link_file_path;
  std::map<std::string, double> tenant_weights;
  size_t max_decisions_per_workflow = 256;
  // Set (the embedding API): the driver runs LLM nodes on these engines, one per worker,
  // instead of `engine`'s (with engines_run_llm true: the engines' step reports are the
  // results).
  // A factory that returns no engine for a worker leaves it the driver's own (serve's
  // local workers beside joined ones, serve/serve_join.h).
  EngineFactory engine_factory;
  // Set: completes FillCluster's answer, called last (serve's joined workers).
  std::function<void(v1::ClusterState*)> fill_cluster;
  // Set: worker w's HBM tier (its KV pool's blocks) when they live outside this process —
  // serve's joined workers: each one's KV store, reached over the KV-store protocol (UCX). It
  // gets the tier's slot size and capacity; null for a worker whose pool stays an emulated
  // arena in this process.
  std::function<Result<std::unique_ptr<kv_tiers::Tier>>(int worker, const kv_tiers::TierOptions&)>
      hbm_tier_factory;
  // Set (with hbm_tier_factory): adds movers for those tiers to the first model's
  // BlockManager, beside the peer and relay movers (serve's joined workers: a direct
  // worker-to-worker mover, preferred to the relay between two of their stores).
  std::function<void(const kv_tiers::MoverEnv&, kv_tiers::MoverSet*)> add_movers;
  // Set, engine "cpu": the first model's record of every context's token ids, shared with
  // what engine_factory makes (joined CPU workers' engines record and forward them).
  std::shared_ptr<cpu_engine::TokenLog> cpu_token_log;
  // Set (serve's joined workers): where each joined worker runs, as it reported it; the
  // topology puts the workers on other hosts there (scheduler/joined_topology.h).
  std::optional<scheduler::JoinedHosts> joined_hosts;
};

class SchedulerDriver final : public executors::Generation {
 public:
  struct Callbacks {
    // Simulated LLM node placed on a worker (the service records LLM_STARTED).
    std::function<void(const std::string& wf, const std::string& node)> llm_placed;
    // Simulated LLM node ended (the service records LLM_FINISHED or LLM_FAILED).
    std::function<void(const std::string& wf, const std::string& node, const Status& st,
                       int64_t output_tokens)>
        llm_done;
    // The scheduler will run a simulated LLM node again (its attempt failed: the worker
    // was lost, or the engine failed it), for the service to record that attempt as failed
    // and the node as ready for the next (LLM_FAILED, retryable).
    std::function<void(const std::string& wf, const std::string& node, const std::string& why)>
        llm_retried;
    // The scheduler failed a workflow (the service records it durably).
    std::function<void(const std::string& wf, const std::string& node, const std::string& reason)>
        workflow_failed;
    // Every decision, for an engine listener (embedding API).
    std::function<void(const std::string& wf, const v1::Decision&)> decision;
    // The learned tool durations changed (saved at most every kDurationsSaveDelay after a
    // tool finished, and on SaveDurationsNow()), for the service to persist.
    std::function<void(const v1::LearnedDurations&)> durations_learned;
    // A worker was lost while it held some of the workflow: the evidence, for the service
    // to record durably (called before the decisions the loss caused are reported).
    std::function<void(const std::string& wf, const v1::WorkerLoss&)> worker_lost;
  };

  // Builds the stack and starts the driver on `loop`. Null (the service): the driver's
  // own real-time loop (AsioEventLoop), run on a thread of its own. Given (tests, virtual
  // time: a VirtualEventLoop): the caller runs the loop, from one thread, and the driver
  // starts no thread; its blocking calls (Sync, DrainWorker, LearnedDurations, ...) then
  // run the loop themselves until their work ran, so call them from the thread that runs
  // the loop and never from a callback. The loop must outlive the driver, and callbacks
  // the driver posted must not run after it is destroyed.
  static Result<std::unique_ptr<SchedulerDriver>> Start(SchedulerConfig config,
                                                        const std::string& data_dir,
                                                        Callbacks callbacks,
                                                        EventLoop* loop = nullptr);
  ~SchedulerDriver();

  void Submit(const v1::Workflow& workflow);
  void Append(const std::string& workflow_id, const v1::ProgramNode& node);
  void Close(const std::string& workflow_id);
  void Cancel(const std::string& workflow_id);
  // The workflow failed in the service's durable graph (a node failed for good): the core
  // stops it and ends it with `fail` naming `node_id` and `reason` (Cancel: `cancel`).
  void Fail(const std::string& workflow_id, const std::string& node_id, const std::string& reason);
  // A tool or LLM report (already validated and durable).
  void Report(const std::string& workflow_id, const v1::NodeEvent& event);
  // Whether the core placed the LLM node on an engine and has not seen it end or be
  // preempted since (the embedding API refuses results for nodes it never placed).
  bool Placed(const std::string& workflow_id, const std::string& node_id) const;
  // Worker `worker` is gone (its engine died): the core's failure sequence (invariant 5)
  // for the nodes and contexts it held (executors::Runtime::WorkerLost). Each workflow it
  // held some of gets a v1::WorkerLoss (Callbacks::worker_lost) naming `reason`.
  void WorkerLost(int worker, std::string reason = "");
  // A lost worker is back as a new incarnation: its engine starts over empty
  // (executors::Engine::Reset; an engine that cannot keeps the worker lost) and the core
  // places on it again (executors::Runtime::WorkerJoined), in `role` where given.
  // `reason` is logged.
  void WorkerJoined(int worker, std::string reason = "",
                    std::optional<scheduler::WorkerRole> role = std::nullopt);
  // Worker `worker` is drained (`on`) or put back in service (executors::Runtime::Drain):
  // nothing new is placed on it, its idle contexts move off (the policy's choice of tier,
  // or a discard), running calls finish there. Returns its state once the core has seen
  // the change. InvalidArgument for an unknown worker, FailedPrecondition for a lost one.
  struct WorkerDrainState {
    int worker = -1;
    std::string state;  // alive | draining
    bool drained = false;
  };
  Result<WorkerDrainState> DrainWorker(int worker, bool on);
  // The model's weights changed: every KV block of the older epoch is invalidated — the
  // core's contexts and the tiers' blocks (invariant 4). Returns the new epoch.
  uint64_t BumpModelEpoch(const std::string& model_id);

  // Drops everything kept about an ended workflow: the core's record and the mirror's
  // contexts and decisions (the service archived it). Runs on the loop after what was
  // posted before it; a workflow the core has not ended is kept.
  void Forget(const std::string& workflow_id);
  // Workflows the mirror holds (ended ones not yet forgotten included).
  size_t mirrored_workflows() const;

  // Adds KV placement and decisions of a workflow to its status.
  void Fill(const std::string& workflow_id, v1::WorkflowStatus* status) const;
  // The workflow's timeline: node events and the transfers its decisions caused
  // (timeline_recorder.h). False when the mirror does not hold the workflow.
  bool FillTimeline(const std::string& workflow_id, v1::WorkflowTimeline* out) const;
  void FillCluster(v1::ClusterState* cluster) const;
  // Replaces the core's learned tool durations with saved ones (a restart); call before
  // workflows are fed. On error nothing changes.
  Status RestoreDurations(const v1::LearnedDurations& saved);
  // Saves what was learned since the last save now (the owner calls it before it stops
  // the store the callback writes to; never call from a callback).
  void SaveDurationsNow();
  // What the core has learned now (runs on the loop; never call from a callback).
  v1::LearnedDurations LearnedDurations();
  static constexpr Duration kDurationsSaveDelay = Seconds(1.0);
  // Runs `fn` on the loop and waits for it (tests; never call from a callback).
  void Sync(std::function<void()> fn = {});
  const SchedulerConfig& config() const { return config_; }
  // Engine steps, transfers by link and the ready queue, for /metrics (thread-safe).
  DriverMetrics& metrics() { return metrics_; }
  const DriverMetrics& metrics() const { return metrics_; }
  std::string model_executor_name() const override;
  bool runs_llm_nodes() const override { return config_.engines_run_llm; }
  int workers() const override { return total_workers(); }
  // What moves KV: real bytes for cpu models, emulated at 1/kv_bytes_scale for simulated.
  std::string kv_mover_description() const;
  // The served model's id (ServedModel.id; default: its config name, the CPU engine's
  // shape name). The rest of executors::Generation (executors/generation.h): the served
  // models, their tokenizers, node inputs and token streams.
  std::string model_name() const override;
  Result<std::string> ResolveModel(const std::string& model_id) const override;
  const cpu_engine::Model* cpu_model(const std::string& model_id = "") const override;
  const cpu_engine::Tokenizer* tokenizer(const std::string& model_id = "") const override;
  std::vector<std::string> model_ids() const override;
  void SetNodeInput(const std::string& wf, const std::string& node, NodeInput input) override;
  void Watch(const std::string& wf, const std::string& node, TokenWatcher watcher) override;
  void WatchPlacement(const std::string& wf, const std::string& node,
                      std::function<void(int worker)> fn) override;
  void WatchKv(std::function<void(const KvDecision&)> fn) override;
  void ReportLoad(int worker, const scheduler::ReportedLoad& load) override;
  void ReportContextEvicted(const std::string& context, int worker) override;
  std::optional<int64_t> cached_tokens(const std::string& wf,
                                       const std::string& node) const override;

 private:
  struct CtxView {
    std::string wf, name;
    scheduler::Location loc;
    int64_t tokens = 0;
    uint64_t bytes = 0;
    bool in_flight = false;
    scheduler::Location to;
    bool known = false;  // the core has it (false: never created or dropped)
  };
  struct WfView {
    std::set<std::string> contexts;                 // context keys "wf/ctx"
    std::map<std::string, int64_t> first_token_ms;  // by node
    std::map<std::string, int64_t> cached_tokens;   // by node, as of its first token
    std::deque<v1::Decision> decisions;
    uint64_t dropped = 0;
    TimelineRecorder timeline;
  };
  struct XferView {
    std::string ctx, wf;
    scheduler::Location src, dst;
    uint64_t bytes = 0;
    int cls = 0;
    std::vector<uint32_t> links;  // topology link indices of the route
  };

  SchedulerDriver(SchedulerConfig config, Callbacks callbacks);
  void Observe(const scheduler::Event& e, const scheduler::Commands& out, Time now);
  void Refresh(const std::string& wf) REQUIRES(mu_);  // loop thread, mu_ held
  void Record(const scheduler::Command& c, Time now, std::vector<v1::Decision>* emitted)
      REQUIRES(mu_);
  // The timeline and the decision / transfer log lines (scheduler_driver_timeline.cc;
  // loop thread, mu_ held).
  TimelineRecorder& TimelineOf(WfView& w) const REQUIRES(mu_);
  void NoteEvent(const scheduler::Event& e, Time now) REQUIRES(mu_);
  void NoteDecision(const scheduler::Command& c, const v1::Decision& d, Time now) REQUIRES(mu_);
  // Parts of Observe: the mirror's view of an event (returns the workflows it touched; a
  // lost worker's evidence into `losses`), of the commands, and of the workers (mu_ held);
  // then the callbacks (mu_ not held).
  std::vector<std::string> MirrorEvent(const scheduler::Event& e, const scheduler::Commands& out,
                                       Time now,
                                       std::vector<std::pair<std::string, v1::WorkerLoss>>* losses)
      REQUIRES(mu_);
  void MirrorCommands(const scheduler::Commands& out, Time now, std::vector<v1::Decision>* emitted,
                      std::vector<std::string>* touched) REQUIRES(mu_);
  void MirrorWorkers() REQUIRES(mu_);
  void Notify(const scheduler::Event& e, const scheduler::Commands& out,
              const std::vector<std::pair<std::string, v1::WorkerLoss>>& losses,
              const std::vector<v1::Decision>& emitted);
  void EndTransfer(const scheduler::Event& e, const XferView& x, Time now) REQUIRES(mu_);
  // A kWorkerLost (scheduler_driver_loss.cc; mu_ held, before the commands are recorded):
  // the evidence per workflow the worker held some of; the transfers to or from it end
  // failed in the mirror (the core already dropped them).
  std::vector<std::pair<std::string, v1::WorkerLoss>> NoteWorkerLoss(const scheduler::Event& e,
                                                                     const scheduler::Commands& out,
                                                                     Time now) REQUIRES(mu_);
  std::vector<uint32_t> LinksOf(const scheduler::Location& src,
                                const scheduler::Location& dst) const;
  std::string TierName(const scheduler::Location& l) const;
  // Parts of FillCluster (mu_ held): tier occupancy per worker; every topology link with
  // its budget by class and the grants in flight on it.
  void FillClusterLocked(v1::ClusterState* out) const
      EXCLUDES(mu_);  // FillCluster's part under mu_
  void FillTiers(v1::ClusterState* out) const REQUIRES(mu_);
  void FillLinks(v1::ClusterState* out) const REQUIRES(mu_);
  void FillEngines(v1::ClusterState* out) const REQUIRES(mu_);
  struct Group;
  void FillWorkerTiers(int w, const Group& g, uint64_t scale, bool real,
                       std::map<std::pair<std::string, int>, int>& contexts,
                       v1::ClusterState* out) const REQUIRES(mu_);
  // One served model (scheduler_driver_models.cc): its workers, what prices and runs them,
  // and the tiers its KV lives in — a KV layout of its own (models' blocks differ in
  // size), so a BlockManager, host arena, disk tier and mover of its own. Models share the
  // links, the core and the policy.
  struct Group : ServedModel {
    ServedModelSpec spec;  // spec.id resolved (the model's own name when it was empty)
    const EngineImplementation* impl = nullptr;  // how its engines are made
    int first = 0;                               // its workers: first .. first + spec.workers - 1
    uint64_t host_bytes = 0, disk_bytes = 0;     // its part of the tiers (scheduler bytes)
    std::unique_ptr<kv_tiers::Tier> host_tier, disk_tier;
    std::unique_ptr<kv_tiers::BlockManager> blocks;
    std::unique_ptr<executors::TieredKvMover> mover;
    Group();
    ~Group();
    bool Has(int w) const { return w >= first && w < first + spec.workers; }
  };
  // Parts of Start (scheduler_driver_models.cc): each model's group — its cost (and its
  // KV layout), tiers, block manager and engines — and the mover that routes each move to
  // the group of its workers.
  Status MakeGroups();
  void SizeSharedTiers();   // host_bytes_, disk_bytes_ and each model's part of them
  Status BuildCoreStack();  // the policy, budgets and core (executors::BuildStack)
  void StartRuntime();      // the runtime over the engines, tools and mover
  // A node's input (SetNodeInput) into the sequence the runtime admits for it.
  void ApplyNodeInput(const std::string& wf, const v1::ProgramNode& n,
                      executors::SequenceSpec* seq) const;
  void LogStarted(const std::string& kv_dir) const;
  Status MakeGroupTiers(Group& g, const std::string& kv_dir);
  Status MakeEngines();  // every worker's, in order
  Status MakeMover();
  executors::EngineLimits LimitsOf(const Group& g) const;
  Group& GroupOf(int worker) const;                           // worker in range
  const Group* FindGroup(const std::string& model_id) const;  // served id or alias
  int total_workers() const { return static_cast<int>(group_of_.size()); }

  SchedulerConfig config_;
  Callbacks callbacks_;
  uint64_t host_bytes_ = 0, disk_bytes_ = 0;
  // Declared first, destroyed last: the budgets, movers and BlockManager post to it.
  std::unique_ptr<AsioEventLoop> own_loop_;     // null: an injected loop
  EventLoop* loop_ = nullptr;                   // the loop everything runs on
  std::vector<std::unique_ptr<Group>> groups_;  // the first is the default model's
  std::vector<int> group_of_;                   // worker -> its group
  // The policy, link budgets, core and runtime (executors/stack.h, as replay builds them).
  executors::Stack stack_;
  std::vector<std::unique_ptr<kv_tiers::Tier>> hbm_tiers_;  // the emulated HBM arenas
  // One record per engine worker, in worker order: its engine, HBM tier and KV pool.
  std::vector<EngineWorker> workers_;
  std::vector<ReportedEngine*> reported_;  // the engines, when an outside engine reports
  bool any_computes_ = false;              // some model's engines compute (real KV bytes)
  // Worker w's HBM tier (null for one out of range).
  kv_tiers::Tier* HbmOf(int w) const;
  std::unique_ptr<ReportedToolWaiter> tools_;
  std::unique_ptr<executors::KvMover> mover_;  // routes each move to its group's mover
  std::thread thread_;

  std::map<std::string, std::string> tenant_of_;  // workflow -> tenant (loop thread only)
  void ScheduleDurationsSave();                   // loop thread
  void SaveDurations();                           // loop thread
  bool durations_save_pending_ = false;
  void ApplyTenantQuotas(Group& g);
  mutable Mutex mu_;  // guards the mirror below
  // Placed LLM nodes not ended since, with their worker, by workflow (Placed()).
  std::unordered_map<std::string, std::map<std::string, int>> placed_ GUARDED_BY(mu_);
  std::map<int, std::string> loss_reason_
      GUARDED_BY(mu_);  // WorkerLost's reason until its event is observed
  std::map<std::string, uint64_t> epochs_ GUARDED_BY(mu_);         // BumpModelEpoch's, by model
  std::unordered_map<std::string, CtxView> ctxs_ GUARDED_BY(mu_);  // looked up per event: hashed
  std::unordered_map<std::string, WfView> wfs_ GUARDED_BY(mu_);
  std::map<uint64_t, XferView> xfers_ GUARDED_BY(mu_);
  std::map<int, uint64_t> hbm_used_ GUARDED_BY(mu_);
  // Per worker, as of the last event: alive | lost | draining, and drained.
  std::map<int, std::pair<std::string, bool>> worker_state_ GUARDED_BY(mu_);
  std::map<int, scheduler::WorkerRole> worker_role_ GUARDED_BY(mu_);
  scheduler::PdStats pd_stats_ GUARDED_BY(mu_);
  // Link file figures that contradict a joined worker's report (set at start).
  std::vector<scheduler::TopologyConflict> topology_conflicts_;
  std::map<std::string, uint64_t> decisions_by_kind_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t> bytes_moved_by_tier_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t> real_bytes_moved_
      GUARDED_BY(mu_);  // the mover's, copied on the loop
  // Loop thread only: node inputs and output watchers by "wf/node".
  struct Watcher {
    TokenWatcher fn;
    int64_t next = 0;  // the next output index to pass on
  };
  std::unordered_map<std::string, NodeInput> inputs_;
  std::unordered_map<std::string, Watcher> watchers_;
  std::unordered_map<std::string, std::function<void(int)>> placements_;
  std::function<void(const KvDecision&)> kv_watcher_;
  void ReportKvDecisions(const scheduler::Commands& out) const;
  void OnStep(const executors::StepReport& r);
  void EndWatchers(const scheduler::Event& e, const scheduler::Commands& out);
  uint64_t events_ = 0;
  DriverMetrics metrics_;  // fed on the loop thread (own lock)
};

}  // namespace switchyard::driver
