// CUDA figure (CUDA builds with a device): HBM <-> pinned host bandwidth of the "cuda"
// mover against a bare cudaMemcpyAsync of the same bytes in the same run. In builds
// without the CUDA headers this file compiles to nothing; without a device the
// benchmarks skip and no figure is reported.
#if __has_include(<cuda_runtime_api.h>)
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "bench/common/report.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/tier_registry.h"

namespace switchyard::kv_tiers {
namespace {

constexpr uint64_t kBytes = 64ull << 20;
constexpr uint64_t kSlot = 2ull << 20;

struct CudaPair {
  std::unique_ptr<Tier> hbm, pinned;
  std::vector<MoveSegment> to_hbm;
  std::string error;
};

CudaPair MakeCudaPair() {
  CudaPair p;
  TierOptions o;
  o.slot_bytes = kSlot;
  o.capacity_bytes = kBytes;
  auto hbm = TierRegistry::Global().CreateNamed("cuda-hbm", o);
  auto pinned = TierRegistry::Global().CreateNamed("pinned-host", o);
  if (!hbm.ok() || !pinned.ok()) {
    p.error = (!hbm.ok() ? hbm.status() : pinned.status()).ToString();
    return p;
  }
  p.hbm = std::move(hbm).value();
  p.pinned = std::move(pinned).value();
  for (uint64_t i = 0; i < kBytes / kSlot; ++i) {
    p.to_hbm.push_back(
        {p.pinned->Allocate("b", kSlot).value(), p.hbm->Allocate("b", kSlot).value(), kSlot});
  }
  return p;
}

void BM_CudaMoverPinnedToHbm(benchmark::State& state) {
  CudaPair p = MakeCudaPair();
  if (!p.error.empty()) return state.SkipWithError(p.error.c_str());
  VirtualEventLoop loop;
  MoverEnv env;
  env.loop = &loop;
  auto mover = MoverRegistry::Global().Create("cuda", env);
  if (!mover.ok()) return state.SkipWithError(mover.status().ToString().c_str());
  for (auto _ : state) {
    MoveRequest req{p.pinned.get(), p.hbm.get(), p.to_hbm, {}};
    (void)(*mover)->Submit(std::move(req), nullptr).value().wait();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

void BM_BareCudaMemcpyAsync(benchmark::State& state) {
  CudaPair p = MakeCudaPair();
  if (!p.error.empty()) return state.SkipWithError(p.error.c_str());
  cudaStream_t stream;
  (void)cudaStreamCreate(&stream);
  for (auto _ : state) {
    for (const auto& s : p.to_hbm) {
      (void)cudaMemcpyAsync(p.hbm->Data(s.dst), p.pinned->Data(s.src), kSlot,
                            cudaMemcpyHostToDevice, stream);
    }
    (void)cudaStreamSynchronize(stream);
  }
  (void)cudaStreamDestroy(stream);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}

BENCHMARK(BM_CudaMoverPinnedToHbm)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BareCudaMemcpyAsync)->UseRealTime()->Unit(benchmark::kMillisecond);

void ReportKvTiersCuda(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  auto s = runs.find("BM_CudaMoverPinnedToHbm/real_time");
  auto b = runs.find("BM_BareCudaMemcpyAsync/real_time");
  if (s == runs.end() || b == runs.end()) return;  // no device: no figure
  cudaDeviceProp prop{};
  (void)cudaGetDeviceProperties(&prop, 0);
  bench::Result r;
  r.name = "cuda_mover_pinned_to_hbm_64MiB";
  r.value = s->second.bytes_per_second / 1e9;
  r.unit = "GB/s";
  r.baseline = "cudaMemcpyAsync";
  r.baseline_value = b->second.bytes_per_second / 1e9;
  r.note = std::string("device: ") + prop.name;
  report->Add(r);
}

SY_BENCH_REPORT(kv_tiers_cuda, ReportKvTiersCuda);

}  // namespace
}  // namespace switchyard::kv_tiers
#endif
