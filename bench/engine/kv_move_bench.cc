// bench engine, KV moves: a CPU engine context's real KV blocks exported to the host tier
// and imported back through TieredKvMover (the path the service's demote and prefetch
// take: BlockManager writes with checksums and commits, reads under the commit rule),
// against memcpy of the same bytes in the same block sizes.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/virtual_event_loop.h"
#include "bench/common/report.h"
#include "cpu_engine/cpu_engine.h"
#include "executors/tiered_mover.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/worker_pool.h"

namespace switchyard::cpu_engine {

namespace {
constexpr int64_t kTokens = 4096, kBlockTokens = 16;

double MedianTime(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A context "wf/c" of kTokens tokens of real (random) bytes in the engine's pool, filled as
// a move would, then committed.
void FillContext(CpuEngine& e) {
  const uint64_t bpb = e.kv_block_bytes();
  std::mt19937 rng(7);
  if (!e.Import("wf/c", kTokens).ok()) std::abort();
  auto t = e.ImportTargets("wf/c");
  for (void* b : *t)
    for (uint64_t i = 0; i < bpb / 4; ++i) static_cast<uint32_t*>(b)[i] = rng();
  (void)e.CommitImport("wf/c", kTokens);
}

// Seconds per run (the warm-up run left out) of the export, the import, and the two
// baselines: memcpy of the same bytes block by block, on one thread and on as many threads
// as the mover copies on.
struct KvMoveTimes {
  std::vector<double> out, in, copy, copy_n;
};

// 12 runs of: the context exported from the pool into the host tier, then imported back
// into fresh pool blocks, then both memcpy baselines; `helpers` threads beside the caller's
// for the second baseline.
KvMoveTimes TimeMoves(VirtualEventLoop& loop, CpuEngine& e, executors::TieredKvMover& mover,
                      size_t blocks, int helpers) {
  const uint64_t bpb = e.kv_block_bytes();
  uint64_t id = 0;
  auto move = [&](scheduler::Location src, scheduler::Location dst) {
    scheduler::Command c{.kind = scheduler::CommandKind::kDemote,
                         .workflow_id = "wf",
                         .context = "wf/c",
                         .src = src,
                         .dst = dst,
                         .bytes = blocks * bpb,
                         .transfer_id = ++id};
    bool done = false;
    mover.Move(c, [&](Status st) {
      if (!st.ok()) std::abort();
      done = true;
    });
    while (!done) loop.Run();
  };
  const scheduler::Location pool{scheduler::Tier::kHbm, 0}, tier{scheduler::Tier::kHost, 0};
  // The baseline copies the same bytes: every block of the context, read from memory of
  // its own (an untouched buffer would read the kernel's one zero page, always in cache).
  std::vector<char> a(blocks * bpb), b(blocks * bpb);
  const executors::ContextKvView view = *e.ExportKv("wf/c");
  for (size_t k = 0; k < blocks; ++k) std::memcpy(a.data() + k * bpb, view.blocks[k], bpb);
  std::memset(b.data(), 1, b.size());
  std::unique_ptr<kv_tiers::WorkerPool> pool_threads;
  if (helpers > 0) pool_threads = std::make_unique<kv_tiers::WorkerPool>(helpers);
  KvMoveTimes times;
  for (int r = 0; r < 12; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    move(pool, tier);  // export: the pool's blocks written into the host tier
    auto t1 = std::chrono::steady_clock::now();
    (void)e.Release("wf/c");
    (void)e.Import("wf/c", kTokens);
    auto t2 = std::chrono::steady_clock::now();
    move(tier, pool);  // import: the host tier's blocks read into fresh pool blocks
    auto t3 = std::chrono::steady_clock::now();
    for (size_t k = 0; k < blocks; ++k) std::memcpy(b.data() + k * bpb, a.data() + k * bpb, bpb);
    auto t4 = std::chrono::steady_clock::now();
    kv_tiers::ParallelFor(pool_threads.get(), blocks, [&](size_t from, size_t to) {
      for (size_t k = from; k < to; ++k) std::memcpy(b.data() + k * bpb, a.data() + k * bpb, bpb);
    });
    auto t5 = std::chrono::steady_clock::now();
    if (r == 0) continue;  // warm-up
    times.out.push_back(std::chrono::duration<double>(t1 - t0).count());
    times.in.push_back(std::chrono::duration<double>(t3 - t2).count());
    times.copy.push_back(std::chrono::duration<double>(t4 - t3).count());
    times.copy_n.push_back(std::chrono::duration<double>(t5 - t4).count());
  }
  return times;
}

// The three rows: export and import against memcpy on one thread, export against memcpy on
// as many threads (`helpers` + the caller's).
void ReportKvMoves(const Model& model, const KvMoveTimes& t, size_t blocks, uint64_t bpb,
                   int helpers, bench::Report* report) {
  const double bytes = static_cast<double>(blocks * bpb);
  const std::string what = std::to_string(kTokens) + "-token context (" +
                           std::to_string(static_cast<int64_t>(bytes / (1 << 20))) + " MiB, " +
                           std::to_string(blocks) + " blocks), " + model.shape().name +
                           " (random weights)";
  const std::string base = "memcpy of the same bytes, block by block";
  const std::string threads = std::to_string(helpers + 1) + (helpers ? " threads" : " thread");
  const std::string base_n = base + ", on " + threads;
  report->Add({"KV export pool -> host tier, " + what, bytes / MedianTime(t.out) / 1e9, "GB/s",
               true, base, bytes / MedianTime(t.copy) / 1e9,
               "TieredKvMover: BlockManager write + XXH3 checksum + commit per block, copies and "
               "checksums on " +
                   threads + " (the caller's and the mover's copy threads); goal ratio >= 0.9"});
  report->Add({"KV import host tier -> pool, " + what, bytes / MedianTime(t.in) / 1e9, "GB/s", true,
               base, bytes / MedianTime(t.copy) / 1e9,
               "TieredKvMover: commit-rule read lease + copy per block, on " + threads +
                   "; goal ratio >= 0.9"});
  report->Add({"KV export pool -> host tier vs memcpy on as many threads, " + what,
               bytes / MedianTime(t.out) / 1e9, "GB/s", true, base_n,
               bytes / MedianTime(t.copy_n) / 1e9,
               "the same export against a memcpy split over the same number of threads"});
}

}  // namespace

void KvExportImport(const Model& model, bench::Report* report) {
  VirtualEventLoop loop;
  TokenLog log;
  executors::EngineLimits limits;
  limits.block_tokens = kBlockTokens;
  limits.pool_blocks = executors::BlocksFor(kTokens, kBlockTokens) + 1;
  auto engine = CpuEngine::Create(&loop, 0, limits, CpuEngine::Options{&model, &log});
  if (!engine.ok()) return;
  CpuEngine& e = **engine;
  const uint64_t bpb = e.kv_block_bytes();
  const size_t blocks = static_cast<size_t>(executors::BlocksFor(kTokens, kBlockTokens));
  auto layout =
      kv_tiers::KvLayout::FromModelConfig(ToModelConfig(model.shape()), kBlockTokens).value();
  kv_tiers::TierOptions o;
  o.slot_bytes = bpb;
  o.capacity_bytes = (blocks + 1) * bpb;
  auto host = kv_tiers::ArenaTier::Create(o, kv_tiers::HostBackend()).value();
  kv_tiers::MoverEnv env;
  env.loop = &loop;
  kv_tiers::MoverSet movers;
  movers.Add(std::make_shared<kv_tiers::LocalMover>(env), 10);
  kv_tiers::BlockManagerOptions bo;
  bo.reclaim_on_high_watermark = false;
  kv_tiers::BlockManager mgr(layout, &loop, std::move(movers), nullptr, bo);
  if (!mgr.AddTier(host.get()).ok()) return;
  executors::TieredKvMover::Options mo;
  mo.tier_of = [&](const scheduler::Location&) -> Result<std::string> { return host->name(); };
  mo.engine_kv = [&](const scheduler::Location& l) -> executors::EngineKv* {
    return l.tier == scheduler::Tier::kHbm ? &e : nullptr;
  };
  // SY_KV_COPY_THREADS: the export's copy threads (default: the mover's own choice), for
  // side-by-side runs of the serial path.
  if (const char* n = std::getenv("SY_KV_COPY_THREADS")) mo.copy_threads = std::atoi(n);
  executors::TieredKvMover mover(&loop, &mgr, mo);
  FillContext(e);
  // The export and import copy on the mover's copy threads and the caller's: the same
  // number of threads also runs the memcpy once more, for a second, stricter baseline.
  const int helpers = mo.copy_threads >= 0
                          ? mo.copy_threads
                          : std::min(3, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  KvMoveTimes times = TimeMoves(loop, e, mover, blocks, helpers);
  ReportKvMoves(model, times, blocks, bpb, helpers, report);
}

}  // namespace switchyard::cpu_engine
