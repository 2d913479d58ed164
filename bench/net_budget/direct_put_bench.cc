// Direct worker-to-worker puts through the whole path serve uses, against ucx_perftest.
//
// Serve's own wiring (serve::JoinRemoteWorkers: each joined worker's KV store as a
// KvStoreTier, the DirectPutMover with put orders over the worker control
// connections) and two `switchyard worker --join` processes (the binary beside this one)
// on loopback, their stores over UCX_TLS=tcp. A kv_tiers BlockManager on a real-time loop
// moves blocks from worker A's store into worker B's; each move is: a net_budget grant in
// the move's class (BACKGROUND, as a demotion; held until the commit, as the scheduler
// holds it), serve's order over A's control connection, A's in-process read of its store
// and its put to B under B's credit, B's checks (length, XXH3-64, owner, epochs,
// generation) and commit, its ack, A's report, serve's validation and commit of the
// destination block. The destination copies are then dropped (freed at B, so B recycles
// its staging memory as a full store does), in bursts of 16 MiB: a free per move kept
// serve's own UCX progress threads busy between every two moves (~17 % of the 2-vCPU
// VM's samples in a profile), which is this benchmark's hygiene, not the move. Window() moves in
// flight (8 at 1 MiB, 4 at 64 MiB, as the peer_put rows). Baseline: `ucx_perftest -t tag_bw -e`
// (endpoints with peer error handling, as ours) with the same UCX_TLS, message size and iteration
// count, in the same run; the figure without -e is a second row, and the same moves relayed through
// serve (serve's RelayMover, as without the direct mover) a third. Median of kTransportTrials runs
// each, the trials of all four interleaved (a shared machine's load hits them alike); MB = 2^20 B.
// Without the switchyard binary the rows are skipped (said on stderr).
//
// SY_DIRECT_PUT_BENCH_SIZE=1|64 runs one size; SY_TRANSPORT_BENCH_ITERS sets the moves per
// run (as for the transport rows); SY_DIRECT_PUT_BENCH_QUICK=1 measures the direct moves
// alone (no relay, no ucx_perftest: for profiles and A/B runs; the rows carry no baseline);
// SY_DIRECT_PUT_BENCH_CONNECT=address has the workers connect by UCX worker address instead
// of UCX's client-server flow (the ucx transport's param "connect"), for A/B runs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/asio_event_loop.h"
#include "bench/common/process.h"
#include "bench/common/report.h"
#include "bench/net_budget/perftest.h"
#include "kv_tiers/arena_tier.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "net_budget/budget.h"
#include "net_budget/topology.h"
#include "serve/serve_join.h"

namespace switchyard::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kDropBytes = 16ull << 20;  // destination copies dropped at once

int Window(uint64_t bytes) { return bytes >= (64u << 20) ? 4 : 8; }
int Iterations(uint64_t bytes) {
  if (const char* n = std::getenv("SY_TRANSPORT_BENCH_ITERS")) return std::max(1, std::atoi(n));
  return bytes >= (64u << 20) ? 32 : 1024;
}

// A block layout of `bytes` per block: 16 layers x 8 KV heads x 128 dims x K and V x BF16
// = 64 KiB per token, `bytes` / 64 KiB tokens per block.
::switchyard::Result<kv_tiers::KvLayout> LayoutOf(uint64_t bytes) {
  v1::ModelConfig c;
  c.set_name("bench");
  c.set_num_layers(16);
  c.set_num_kv_heads(8);
  c.set_head_dim(128);
  c.set_kv_dtype(v1::BF16);
  return kv_tiers::KvLayout::FromModelConfig(c, static_cast<uint32_t>(bytes / (64 << 10)));
}

// Runs `fn` on the loop's thread and waits for it.
template <typename F>
auto OnLoop(EventLoop& loop, F fn) -> decltype(fn()) {
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto result = task.get_future();
  loop.Post([&task] { task(); });
  return result.get();
}

// Serve with two joined worker processes, A (the source) and B, and a BlockManager over
// their stores with serve's movers, on its own loop thread.
class Cluster {
 public:
  ~Cluster() {
    // Serve's order (serve/serve_join.h "Teardown"): no put order's callback reaches the
    // loop or the tiers once they go.
    if (join_) join_->Detach();
    if (loop_thread_.joinable()) {
      OnLoop(loop_, [this] {
        mgr_.reset();
        return 0;
      });
      loop_.Stop();
      loop_thread_.join();
    }
    tiers_.clear();
    join_.reset();  // its bye ends the workers
    for (pid_t p : pids_) Reap(p, 5);
  }

  // `direct`: serve's movers as serve sets them up; false: without the direct mover (each
  // move relayed through this process: a get from A, a put into B).
  Status Start(uint64_t bytes, int sources, bool direct) {
    const std::string bin = SwitchyardBeside();
    if (!std::filesystem::exists(bin)) return Status::NotFound("no switchyard binary at " + bin);
    bytes_ = bytes;
    const int window = Window(bytes);
    const uint64_t drop = std::max<uint64_t>(1, kDropBytes / bytes);
    const uint64_t store = bytes * (static_cast<uint64_t>(sources + window + 2) + drop);
    serve::ServeJoinOptions jo;
    jo.local_workers = 0;
    jo.remote_workers = 2;
    jo.join_timeout = Seconds(60);
    jo.listening = [&](const std::string& address) {
      const std::string cap = std::to_string(store);
      const char* flow = std::getenv("SY_DIRECT_PUT_BENCH_CONNECT");
      const std::string param = std::string("connect=") + (flow ? flow : "client-server");
      for (const char* id : {"bench-a", "bench-b"}) {
        pids_.push_back(
            Spawn({bin, "worker", "--join", address, "--engine", "simulated", "--id", id,
                   "--kv-capacity", cap, "--log-level", "warn", "--kv-transport-param", param},
                  "/dev/null", /*with_stderr=*/false));
      }
    };
    SY_ASSIGN_OR_RETURN(join_, serve::JoinRemoteWorkers(jo, &config_));
    kv_tiers::TierOptions to;
    to.capacity_bytes = store;
    to.slot_bytes = bytes;
    for (int w = 0; w < 2; ++w) {
      SY_ASSIGN_OR_RETURN(std::unique_ptr<kv_tiers::Tier> t, config_.hbm_tier_factory(w, to));
      tiers_[join_->worker(static_cast<size_t>(w))->hello().worker_id()] = std::move(t);
    }
    kv_tiers::TierOptions ho;
    ho.capacity_bytes = bytes * static_cast<uint64_t>(sources + 1);
    ho.slot_bytes = bytes;
    SY_ASSIGN_OR_RETURN(host_, kv_tiers::ArenaTier::Create(ho, kv_tiers::HostBackend()));
    kv_tiers::MoverEnv env;
    env.loop = &loop_;
    kv_tiers::MoverSet
        movers;  // as serve's driver sets them up (driver/scheduler_driver_models.cc)
    movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
    movers.Add(std::make_shared<kv_tiers::PeerMover>(env), 5);
    movers.Add(std::make_shared<kv_tiers::RelayMover>(env), 1);
    if (direct) config_.add_movers(env, &movers);
    SY_ASSIGN_OR_RETURN(kv_tiers::KvLayout layout, LayoutOf(bytes));
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(std::move(layout), &loop_, std::move(movers),
                                                    nullptr, bo);
    SY_RETURN_IF_ERROR(mgr_->AddTier(host_.get()));
    for (auto& [id, t] : tiers_) SY_RETURN_IF_ERROR(mgr_->AddTier(t.get()));
    SY_ASSIGN_OR_RETURN(net_budget::Topology topo,
                        net_budget::Topology::LoadFile(std::string(SY_SOURCE_DIR) +
                                                       "/configs/topologies/h200x8.json"));
    topo_ = std::make_unique<net_budget::Topology>(std::move(topo));
    budgets_ = std::make_unique<net_budget::LinkBudgets>(*topo_, &loop_);
    SY_ASSIGN_OR_RETURN(path_, topo_->FindPath("node0/nic0", "fabric"));
    loop_thread_ = std::thread([this] { loop_.Run(); });
    for (int i = 0; i < sources; ++i) SY_RETURN_IF_ERROR(FillOne(i));
    return Status::OK();
  }

  // MB/s of `count` moves A -> B with Window() in flight (see the header comment).
  ::switchyard::Result<double> Run(int count) {
    auto done = std::make_shared<std::promise<Status>>();
    auto finished = done->get_future();
    auto t0 = std::make_shared<Clock::time_point>();
    loop_.Post([this, count, done, t0] {
      *t0 = Clock::now();
      run_ = std::make_unique<RunState>();
      run_->left = count;
      run_->done = done;
      for (int i = 0; i < std::min(count, Window(bytes_)); ++i) Next();
    });
    SY_RETURN_IF_ERROR(finished.get());
    return static_cast<double>(bytes_) * count /
           std::chrono::duration<double>(Clock::now() - *t0).count() / kMiB;
  }

  uint64_t relayed() const {
    return static_cast<kv_tiers::remote::KvStoreTier*>(tiers_.at("bench-a").get())->gets_posted();
  }

 private:
  struct RunState {
    int left = 0;     // moves still to start
    int running = 0;  // in flight
    std::shared_ptr<std::promise<Status>> done;
    Status failed;
  };

  // Source block `index`, committed in A's store (serve's fill: the host tier, then the
  // peer mover) and idle.
  Status FillOne(int index) {
    auto moved = std::make_shared<std::promise<kv_tiers::TransferRecord>>();
    auto rec = moved->get_future();
    SY_RETURN_IF_ERROR(OnLoop(loop_, [&]() -> Status {
      std::vector<char> data(bytes_);
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + index);
      kv_tiers::BlockSpec spec{"bench", "wf", "ctx", static_cast<uint32_t>(index), 0, 0, 0};
      SY_ASSIGN_OR_RETURN(BlockId b, mgr_->Allocate(spec, host_->name()));
      SY_RETURN_IF_ERROR(mgr_->BeginWrite(b));
      SY_RETURN_IF_ERROR(mgr_->WriteBytes(b, data.data(), data.size()));
      SY_RETURN_IF_ERROR(mgr_->FinishWrite(b));
      SY_RETURN_IF_ERROR(mgr_->Commit(b));
      auto done = [moved](const kv_tiers::TransferRecord& r) { moved->set_value(r); };
      return mgr_->Move(b, tiers_.at("bench-a")->name(), kv_tiers::MoveOptions{}, true, done)
          .status();
    }));
    kv_tiers::TransferRecord r = rec.get();
    if (r.state != v1::COMMITTED) return r.status.Annotate("filling worker A's store");
    idle_.push_back(r.destination);  // the loop is idle: no run is going
    return Status::OK();
  }

  // Starts the next move: a grant, then the move of an idle source block to B.
  void Next() {
    if (run_->left == 0) return;
    --run_->left;
    ++run_->running;
    const BlockId src = idle_.front();
    idle_.pop_front();
    budgets_->Acquire(path_, net_budget::TrafficClass::kBackground, bytes_,
                      [this, src](::switchyard::Result<net_budget::Grant> g) {
                        if (!g.ok()) return Done(src, g.status());
                        auto grant = std::make_shared<net_budget::Grant>(std::move(*g));
                        kv_tiers::MoveOptions mo;
                        mo.traffic_class = v1::BACKGROUND;
                        auto t = mgr_->Move(
                            src, tiers_.at("bench-b")->name(), mo, false,
                            [this, src, grant](const kv_tiers::TransferRecord& r) {
                              grant->Release();
                              if (r.state == v1::COMMITTED) landed_.push_back(r.destination);
                              Done(src, r.state == v1::COMMITTED ? Status::OK() : r.status);
                            });
                        if (!t.ok()) Done(src, t.status());
                      });
  }

  void Done(BlockId src, const Status& st) {
    idle_.push_back(src);
    --run_->running;
    if (!st.ok() && run_->failed.ok()) run_->failed = st;
    const bool last = run_->running == 0 && (run_->left == 0 || !run_->failed.ok());
    Drop(last);
    if (run_->failed.ok()) Next();
    if (last) run_->done->set_value(run_->failed);
  }

  // Drops the committed destination copies (each freed at B, which recycles its memory)
  // once kDropBytes of them landed, or all of them (`all`): in bursts, so that serve's
  // frees do not keep its own UCX progress busy between every two moves.
  void Drop(bool all) {
    if (!all && landed_.size() * bytes_ < kDropBytes) return;
    for (BlockId b : landed_) {
      Status st = mgr_->Evict(b);
      if (!st.ok() && run_->failed.ok()) run_->failed = st;
    }
    landed_.clear();
  }

  uint64_t bytes_ = 0;
  driver::SchedulerConfig config_;
  std::unique_ptr<workers::JoinServer> join_;
  std::vector<pid_t> pids_;
  std::map<std::string, std::unique_ptr<kv_tiers::Tier>> tiers_;
  std::unique_ptr<kv_tiers::Tier> host_;
  AsioEventLoop loop_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
  std::unique_ptr<net_budget::Topology> topo_;
  std::unique_ptr<net_budget::LinkBudgets> budgets_;
  net_budget::Path path_;
  std::deque<BlockId> idle_;
  std::vector<BlockId> landed_;  // committed at B, not dropped yet
  std::unique_ptr<RunState> run_;
  std::thread loop_thread_;
};

// The figures of one size, MB/s: the moves direct and relayed, and ucx_perftest with and
// without -e. kTransportTrials trials of each, interleaved (trial i of each runs back to
// back) so that on a shared machine each median covers the same stretch of time; each
// cluster warmed up first with the same windowed pattern (B's staging buffers recycled,
// A's session to B open).
struct Figures {
  std::vector<double> direct, relay, perf_e, perf;
  uint64_t relayed = 0;  // blocks serve read out of A's store in the direct runs
};

Status Warm(Cluster& c, uint64_t bytes, bool direct) {
  SY_RETURN_IF_ERROR(c.Start(bytes, 2 * Window(bytes), direct));
  return c.Run(4 * Window(bytes)).status();
}

void Trial(Cluster& c, int iters, std::vector<double>* out) {
  auto r = c.Run(iters);
  if (!r.ok()) std::fprintf(stderr, "direct put bench: %s\n", r.status().ToString().c_str());
  if (r.ok()) out->push_back(*r);
}

std::optional<Figures> Measure(uint64_t bytes, int iters) {
  const bool quick = std::getenv("SY_DIRECT_PUT_BENCH_QUICK") != nullptr;
  Cluster direct, relay;
  Status st = Warm(direct, bytes, true);
  Status relay_st = quick ? Status::Cancelled("quick run") : Warm(relay, bytes, false);
  if (!st.ok() || (!relay_st.ok() && !quick)) {
    std::fprintf(stderr, "direct put bench (%llu B): %s\n", static_cast<unsigned long long>(bytes),
                 (st.ok() ? relay_st : st).ToString().c_str());
    if (!st.ok()) return std::nullopt;
  }
  Figures f;
  for (int i = 0; i < kTransportTrials; ++i) {
    Trial(direct, iters, &f.direct);
    if (quick) continue;
    if (relay_st.ok()) Trial(relay, iters, &f.relay);
    if (auto x = Perftest("tcp", "tag_bw", bytes, iters, 4, "-e")) f.perf_e.push_back(*x);
    if (auto x = Perftest("tcp", "tag_bw", bytes, iters, 4)) f.perf.push_back(*x);
  }
  f.relayed = direct.relayed();
  auto list = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : " ") + std::to_string(static_cast<int>(x));
    return out;
  };
  std::fprintf(stderr,
               "direct put bench %llu MiB, MB/s per trial: direct [%s] relay [%s] "
               "ucx_perftest -e [%s] ucx_perftest [%s]\n",
               static_cast<unsigned long long>(bytes >> 20), list(f.direct).c_str(),
               list(f.relay).c_str(), list(f.perf_e).c_str(), list(f.perf).c_str());
  return f;
}

void ReportDirectPut(const std::map<std::string, Measured>&, bench::Report* report) {
  for (uint64_t bytes : {uint64_t{1} << 20, uint64_t{64} << 20}) {
    const char* only = std::getenv("SY_DIRECT_PUT_BENCH_SIZE");  // "1" or "64" (MiB)
    if (only != nullptr && std::to_string(bytes >> 20) != only) continue;
    std::optional<Figures> f = Measure(bytes, Iterations(bytes));
    if (!f) continue;
    std::optional<double> ours = MedianOf(f->direct), relay = MedianOf(f->relay);
    std::optional<double> perf_e = MedianOf(f->perf_e), perf = MedianOf(f->perf);
    if (!ours) continue;
    const std::string name = "direct_put_tcp_" + std::to_string(bytes >> 20) + "MiB";
    const std::string note =
        "BlockManager move A->B via serve's DirectPutMover: grant, order over A's control "
        "connection, A's put under B's credit, B's validation and commit, A's report, serve's "
        "commit; " +
        std::to_string(Window(bytes)) +
        " moves in flight; blocks serve read out of A's store: " + std::to_string(f->relayed);
    report->Add({name, *ours, "MB/s", true,
                 perf_e ? "ucx_perftest tag_bw -e (peer error handling, as ours)" : "", perf_e,
                 note});
    if (perf) {
      report->Add({name + "_vs_no_error_handling", *ours, "MB/s", true, "ucx_perftest tag_bw", perf,
                   note + "; baseline without peer error handling"});
    }
    if (relay) {
      report->Add({name + "_vs_relay", *ours, "MB/s", true,
                   "the same moves relayed through serve (RelayMover: get from A, put into B)",
                   relay, note + "; baseline: serve's relay"});
    }
  }
}

}  // namespace

SY_BENCH_REPORT(net_budget_direct_put, ReportDirectPut);

}  // namespace switchyard::bench
