// kv_tiers benchmarks: each subject is measured next to its baseline, same bytes, same run.
//   - local mover host -> emulated-hbm (2 MiB, 64 MiB moves) vs plain memcpy;
//   - disk tier WriteBatch / MultiGet of 2 MiB blocks vs raw RocksDB Put / Get;
//   - block-table and block-manager operations per second.
// CUDA figures are in kv_tiers_cuda_bench.cc (CUDA builds with a device).
#include <benchmark/benchmark.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "bench/common/report.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/block_table.h"
#include "kv_tiers/disk_tier.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/tier_registry.h"

namespace switchyard::kv_tiers {
namespace {

constexpr uint64_t kBlock = 2ull << 20;  // a Llama-3.1-8B block (16 tokens, bf16)

struct MemoryPair {
  std::unique_ptr<Tier> host, hbm;
  std::vector<MoveSegment> segments;
};

MemoryPair MakePair(uint64_t bytes) {
  MemoryPair p;
  TierOptions o;
  o.slot_bytes = kBlock;
  o.capacity_bytes = bytes;
  p.host = TierRegistry::Global().CreateNamed("host", o).value();
  p.hbm = TierRegistry::Global().CreateNamed("emulated-hbm", o).value();
  for (uint64_t i = 0; i < bytes / kBlock; ++i) {
    Extent s = p.host->Allocate("bench", kBlock).value();
    Extent d = p.hbm->Allocate("bench", kBlock).value();
    std::memset(p.host->Data(s), static_cast<int>(i), kBlock);
    std::memset(p.hbm->Data(d), 0, kBlock);  // fault the pages in before timing
    p.segments.push_back({s, d, kBlock});
  }
  return p;
}

void BM_LocalMover(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  MemoryPair p = MakePair(bytes);
  VirtualEventLoop loop;
  MoverEnv env;
  env.loop = &loop;
  LocalMover mover(env);
  for (auto _ : state) {
    MoveRequest req{p.host.get(), p.hbm.get(), p.segments, {}};
    Status st = mover.Submit(std::move(req), nullptr).value().wait();
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_Memcpy(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  MemoryPair p = MakePair(bytes);
  for (auto _ : state) {
    for (const auto& s : p.segments) std::memcpy(p.hbm->Data(s.dst), p.host->Data(s.src), kBlock);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

BENCHMARK(BM_LocalMover)->Arg(2 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(2 << 20)->Arg(64 << 20)->UseRealTime();

// --- disk ---------------------------------------------------------------------------------

constexpr int kDiskBlocks = 16;  // 32 MiB per iteration

std::string BenchDir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("sy_bench_kv_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

struct DiskFixture {
  std::unique_ptr<DiskTier> tier;
  std::vector<Extent> extents;
  std::vector<char> value = std::vector<char>(kBlock);
  explicit DiskFixture(const std::string& dir) {
    TierOptions o;
    o.capacity_bytes = 1ull << 40;
    o.path = dir;
    tier = DiskTier::Open(o).value();
    for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 131 + 7);
    for (int i = 0; i < kDiskBlocks; ++i) extents.push_back(tier->Allocate("b", kBlock).value());
  }
  Status WriteAll() {
    std::vector<BlockWrite> w;
    for (const auto& e : extents) w.push_back({e, value.data(), kBlock});
    return tier->Write(w);
  }
};

void BM_DiskTierWrite(benchmark::State& state) {
  DiskFixture f(BenchDir("tier_w"));
  for (auto _ : state) {
    if (Status st = f.WriteAll(); !st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kDiskBlocks * kBlock));
}

void BM_DiskTierRead(benchmark::State& state) {
  DiskFixture f(BenchDir("tier_r"));
  if (!f.WriteAll().ok()) state.SkipWithError("prefill failed");
  std::vector<std::vector<char>> out(kDiskBlocks, std::vector<char>(kBlock));
  std::vector<BlockRead> reads;
  for (int i = 0; i < kDiskBlocks; ++i) reads.push_back({f.extents[i], out[i].data(), kBlock});
  for (auto _ : state) {
    if (Status st = f.tier->Read(reads); !st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kDiskBlocks * kBlock));
}

// Baseline: a plain RocksDB (default options; compression off so neither side spends CPU
// on incompressible bytes), one Put / Get per value.
std::unique_ptr<rocksdb::DB> RawDb(const std::string& dir) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.compression = rocksdb::kNoCompression;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::Open(o, dir, &db).ok()) return nullptr;
  return std::unique_ptr<rocksdb::DB>(db);
}

void BM_RawRocksPut(benchmark::State& state) {
  auto db = RawDb(BenchDir("raw_w"));
  std::vector<char> value(kBlock);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 131 + 7);
  for (auto _ : state) {
    for (int i = 0; i < kDiskBlocks; ++i) {
      (void)db->Put(rocksdb::WriteOptions(), "k" + std::to_string(i),
                    rocksdb::Slice(value.data(), value.size()));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kDiskBlocks * kBlock));
}

void BM_RawRocksGet(benchmark::State& state) {
  auto db = RawDb(BenchDir("raw_r"));
  std::vector<char> value(kBlock);
  for (int i = 0; i < kDiskBlocks; ++i) {
    (void)db->Put(rocksdb::WriteOptions(), "k" + std::to_string(i),
                  rocksdb::Slice(value.data(), value.size()));
  }
  std::string out;
  for (auto _ : state) {
    for (int i = 0; i < kDiskBlocks; ++i) {
      (void)db->Get(rocksdb::ReadOptions(), "k" + std::to_string(i), &out);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kDiskBlocks * kBlock));
}

BENCHMARK(BM_DiskTierWrite)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawRocksPut)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DiskTierRead)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RawRocksGet)->UseRealTime()->Unit(benchmark::kMillisecond);

// --- bookkeeping --------------------------------------------------------------------------

void BM_BlockTableOps(benchmark::State& state) {
  BlockTables tables;
  uint64_t n = 0;
  for (auto _ : state) {
    std::string ctx = "c" + std::to_string(n++ % 64);
    BlockTable* t = tables.Find(ctx);
    if (t == nullptr) t = tables.Create(ctx, "tenant", "wf").value();
    t->Append({BlockId{n}, 1, n, 16});
    benchmark::DoNotOptimize(t->Get(static_cast<uint32_t>(t->size() - 1)));
    if (t->size() > 256) (void)t->Truncate(0);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_BlockTableOps);

// Allocate, write 4 KiB, validate (checksum), commit, read, evict: one block lifecycle.
void BM_BlockLifecycle(benchmark::State& state) {
  v1::ModelConfig c;
  c.set_name("tiny");
  c.set_num_layers(2);
  c.set_num_kv_heads(2);
  c.set_head_dim(16);
  c.set_kv_dtype(v1::BF16);
  KvLayout layout = KvLayout::FromModelConfig(c).value();
  TierOptions o;
  o.slot_bytes = layout.bytes_per_block();
  o.capacity_bytes = 64 * o.slot_bytes;
  auto hbm = TierRegistry::Global().CreateNamed("emulated-hbm", o).value();
  VirtualEventLoop loop;
  BlockManager mgr(layout, &loop, MoverSet());
  (void)mgr.AddTier(hbm.get());
  std::vector<char> data(layout.bytes_per_block(), 1);
  BlockSpec spec{"t", "wf", "ctx", 0, 0, 16, 0};
  ReadRequest reader{"t", "wf", "ctx", mgr.model_epoch(), 1};
  for (auto _ : state) {
    BlockId id = mgr.Allocate(spec, "emulated-hbm").value();
    (void)mgr.BeginWrite(id);
    (void)mgr.WriteBytes(id, data.data(), data.size());
    (void)mgr.FinishWrite(id);
    (void)mgr.Commit(id);
    benchmark::DoNotOptimize(mgr.Read(id, reader).ok());
    (void)mgr.Evict(id);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_BlockLifecycle);

// --- report -------------------------------------------------------------------------------

void Pair(const std::map<std::string, bench::Measured>& runs, bench::Report* report,
          const std::string& name, const std::string& subject, const std::string& baseline,
          const std::string& baseline_name) {
  auto s = runs.find(subject), b = runs.find(baseline);
  if (s == runs.end()) return;
  bench::Result r;
  r.name = name;
  r.value = s->second.bytes_per_second / 1e9;
  r.unit = "GB/s";
  if (b != runs.end()) {
    r.baseline = baseline_name;
    r.baseline_value = b->second.bytes_per_second / 1e9;
  }
  report->Add(r);
}

void Report(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  Pair(runs, report, "local_mover_host_to_emulated_hbm_2MiB", "BM_LocalMover/2097152/real_time",
       "BM_Memcpy/2097152/real_time", "memcpy");
  Pair(runs, report, "local_mover_host_to_emulated_hbm_64MiB", "BM_LocalMover/67108864/real_time",
       "BM_Memcpy/67108864/real_time", "memcpy");
  Pair(runs, report, "disk_tier_write_2MiB_blocks", "BM_DiskTierWrite/real_time",
       "BM_RawRocksPut/real_time", "rocksdb_put");
  Pair(runs, report, "disk_tier_read_2MiB_blocks", "BM_DiskTierRead/real_time",
       "BM_RawRocksGet/real_time", "rocksdb_get");
  for (const auto& [run, unit_name] :
       {std::pair<std::string, std::string>{"BM_BlockTableOps", "block_table_ops"},
        {"BM_BlockLifecycle", "block_lifecycles"}}) {
    auto it = runs.find(run);
    if (it == runs.end()) continue;
    report->Add(
        {unit_name + "_per_second", it->second.items_per_second, "ops/s", true, "", {}, ""});
  }
}

SY_BENCH_REPORT(kv_tiers, Report);

}  // namespace
}  // namespace switchyard::kv_tiers
