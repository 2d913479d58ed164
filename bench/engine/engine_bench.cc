// engine benchmarks: the reference CPU engine's model math (cpu_engine/model.h), random
// weights (the text is meaningless; only the arithmetic and the bytes matter). For each of
// two shapes — tiny-llama-4l and a larger "h1024-8l" (hidden 1024, 8 layers, 16 heads /
// 8 KV heads of 64, MLP 2816, vocab 32000) — measured here, in this run, interleaved with
// its baseline (each side run in turn, the median of the repetitions kept):
//   - prefill: a 512-token prefill through Model::Forward, as GFLOP/s of its linear layers
//     (2 · rows · weights of the Q/K/V, O, gate/up and down projections, plus the LM head
//     of the one row with logits) vs plain cblas_sgemm of the same shapes with all 512 rows
//     in one call per weight matrix (goal ratio >= 0.7);
//   - the same prefill on one thread vs one-call sgemm on one thread;
//   - the batch-invariant linear kernel alone (kernels.h Linear on packed weights, what
//     Forward runs) vs that one-call sgemm;
//   - decode: one step of 8 sequences at 512 tokens of context, as tokens/s and as bytes/s
//     of what the step must read (every weight but the embedding table, 8 embedding rows,
//     the 8 contexts' KV) vs a streaming read of the same number of bytes ("memory
//     bandwidth"; goal ratio >= 0.5).
// Weights are stored as each shape says (bf16 by default: ModelShape::weight_dtype); each
// result's name says which. Then weight storage: a Qwen2.5-0.5B-like shape (hidden 896,
// 24 layers, 14 heads / 2 KV heads of 64, MLP 4864, vocab 151936, tied embeddings, q/k/v
// biases; random weights rounded to bf16) stored as bf16 and as fp32 — the same values,
// the same bits out:
//   - decode: one step of 8 sequences at 128 tokens of context, tokens/s, bf16 storage vs
//     fp32 storage interleaved;
//   - the bytes the weights occupy as stored (Model::weight_bytes) and the resident memory
//     each model gives back when freed (RSS drop, after malloc_trim), bf16 vs fp32.
// SY_ENGINE_BENCH_STORAGE_ONLY=1 runs only the storage figures.
// Forward runs on the model's thread pool (Model::threads(): the machine's hardware
// threads, at most 8; the partition never changes a bit). Every baseline runs on as many
// threads as the side it is compared with — OpenBLAS set to that many threads around the
// sgemm, the streaming read split into that many parts on a pool of that size — and each
// result's name says how many. OpenBLAS's idle workers spin for about 2^28 cycles after
// each threaded call before they sleep (its default thread timeout): run right after the
// sgemm baseline, Forward's threads would share the two cores with them. So the bench
// re-executes itself once with OPENBLAS_THREAD_TIMEOUT=4 (which OpenBLAS reads when it
// loads: its workers then sleep at once), and each side has the cores to itself.
#include <cblas.h>
#include <malloc.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/report.h"
#include "cpu_engine/kernels.h"
#include "cpu_engine/model.h"
#include "cpu_engine/thread_pool.h"

namespace switchyard::cpu_engine {
namespace {

using SteadyClock = std::chrono::steady_clock;

// See the header comment: before main, once, re-execute with OPENBLAS_THREAD_TIMEOUT set.
const bool kOpenBlasWorkersSleep = [] {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr) return true;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t i = 0; i < all.size();) {
    const size_t end = all.find('\0', i);
    args.push_back(all.substr(i, end - i));
    i = end == std::string::npos ? all.size() : end + 1;
  }
  if (args.empty()) return false;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
  execv("/proc/self/exe", argv.data());
  return false;  // exec failed: measure as we are
}();
constexpr int64_t kPrefill = 512, kDecodeSeqs = 8, kContext = 512, kBlock = 16;

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Runs each side `reps` times in turn (after one untimed warm-up each); median seconds.
std::vector<double> Interleaved(const std::vector<std::function<void()>>& sides, int reps) {
  std::vector<std::vector<double>> t(sides.size());
  for (const auto& s : sides) s();
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < sides.size(); ++i) {
      auto t0 = SteadyClock::now();
      sides[i]();
      t[i].push_back(std::chrono::duration<double>(SteadyClock::now() - t0).count());
    }
  std::vector<double> out;
  for (auto& v : t) out.push_back(Median(v));
  return out;
}

ModelShape LargeShape() {
  ModelShape s;
  s.name = "h1024-8l";
  s.vocab_size = 32000;
  s.hidden = 1024;
  s.layers = 8;
  s.heads = 16;
  s.kv_heads = 8;
  s.head_dim = 64;
  s.intermediate = 2816;
  s.seed = 7;
  return s;
}

// The (in, out) of every linear layer of one decoder layer, fused as Forward runs them.
std::vector<std::pair<int64_t, int64_t>> LayerShapes(const ModelShape& s) {
  return {{s.hidden, s.q_dim() + 2 * s.kv_dim()},
          {s.q_dim(), s.hidden},
          {s.hidden, 2 * s.intermediate},
          {s.intermediate, s.hidden}};
}

double LinearFlops(const ModelShape& s, int64_t rows) {
  double per_row = 0;
  for (auto [in, out] : LayerShapes(s)) per_row += 2.0 * in * out;
  return per_row * s.layers * rows;
}

// KV storage for `n` contexts of `tokens` each.
struct Contexts {
  Contexts(const ModelShape& s, int n, int64_t tokens) {
    const uint64_t floats = KvBlockFloats(s, kBlock);
    const int64_t blocks = (tokens + kBlock - 1) / kBlock;
    for (int c = 0; c < n; ++c) {
      ptrs.emplace_back();
      for (int64_t b = 0; b < blocks; ++b) {
        store.emplace_back(floats, 0.0f);
        ptrs.back().push_back(store.back().data());
      }
    }
  }
  KvBlocks kv(int c) const {
    return {ptrs[c].data(), static_cast<int64_t>(ptrs[c].size()), kBlock};
  }
  std::vector<std::vector<float>> store;
  std::vector<std::vector<float*>> ptrs;
};

std::string Threads(int t) { return std::to_string(t) + (t == 1 ? " thread" : " threads"); }

std::string Tag(const ModelShape& s) {
  return s.name + " (random weights, " + DTypeName(s.weight_dtype) + " weights)";
}

// One-call sgemm of every linear layer on `threads` OpenBLAS threads (back to 1 after).
void Sgemm(const ModelShape& s, const std::vector<std::vector<float>>& w, const float* x, float* y,
           int threads) {
  openblas_set_num_threads(threads);
  size_t k = 0;
  for (int64_t l = 0; l < s.layers; ++l)
    for (auto [in, out] : LayerShapes(s))
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kPrefill, out, in, 1.0f, x, in,
                  w[k++].data(), in, 0.0f, y, out);
  openblas_set_num_threads(1);
}

void PrefillAndLinear(Model& m, bench::Report* report) {
  const ModelShape& s = m.shape();
  const std::string tag = Tag(s);
  const int threads = m.threads();
  // Forward over a 512-token prefill, logits for the last row.
  Contexts ctx(s, 1, kPrefill);
  std::vector<Row> rows;
  for (int64_t p = 0; p < kPrefill; ++p)
    rows.push_back(
        {static_cast<int32_t>((p * 7919) % s.vocab_size), p, ctx.kv(0), p == kPrefill - 1});
  std::vector<float> logits;
  // The same linear layers: weights per layer, activations of 512 rows.
  std::vector<std::vector<float>> w;
  std::vector<PackedMatrix> packed;
  int64_t widest = 0;
  for (int64_t l = 0; l < s.layers; ++l)
    for (auto [in, out] : LayerShapes(s)) {
      w.emplace_back(static_cast<size_t>(in * out), 0.01f);
      packed.emplace_back(w.back().data(), out, in);
      widest = std::max({widest, in, out});
    }
  std::vector<float> x(kPrefill * widest, 0.5f), y(kPrefill * widest);
  ThreadPool pool(threads);
  auto linear = [&] {
    for (const PackedMatrix& p : packed) Linear(x.data(), kPrefill, p, y.data(), p.out(), &pool);
  };
  auto sgemm = [&] { Sgemm(s, w, x.data(), y.data(), threads); };
  auto sgemm1 = [&] { Sgemm(s, w, x.data(), y.data(), 1); };
  auto forward = [&] {
    if (!m.Forward(rows, &logits).ok()) std::abort();
  };
  auto forward1 = [&] {
    m.SetThreads(1);
    forward();
    m.SetThreads(threads);
  };
  const int reps = s.hidden >= 1024 ? 3 : 15;
  auto t = Interleaved({forward, linear, sgemm, forward1, sgemm1}, reps);
  // The LM head of the row with logits counts in Forward's FLOPs and in its baseline.
  const double head = 2.0 * s.vocab_size * s.hidden;
  const double flops = LinearFlops(s, kPrefill);
  const std::string base = "cblas_sgemm, all 512 rows per call (" + Threads(threads) + ")";
  const std::string base1 = "cblas_sgemm, all 512 rows per call (1 thread)";
  report->Add({"prefill 512 tokens, " + Threads(threads) + ", " + tag, (flops + head) / t[0] / 1e9,
               "GFLOP/s", true, base, flops / t[2] / 1e9,
               "linear-layer FLOPs over the whole Forward (attention, norms, rotary included "
               "in its time); goal ratio >= 0.7"});
  report->Add({"prefill 512 tokens, 1 thread, " + tag, (flops + head) / t[3] / 1e9, "GFLOP/s", true,
               base1, flops / t[4] / 1e9, "the same on one thread each"});
  report->Add(
      {"linear layers, batch-invariant kernel on packed weights, " + Threads(threads) + ", " + tag,
       flops / t[1] / 1e9, "GFLOP/s", true, base, flops / t[2] / 1e9,
       "the cost (or gain) of batch invariance: ratio = Linear / one-call sgemm (" +
           std::string(LinearPath()) + " path)"});
}

void Decode(const Model& m, bench::Report* report) {
  const ModelShape& s = m.shape();
  const std::string tag = Tag(s);
  const int threads = m.threads();
  // One context prefilled for real, its KV copied into the other 7 (restoring is memcpy).
  Contexts ctx(s, kDecodeSeqs, kContext + 1);
  std::vector<Row> rows;
  std::vector<float> logits;
  for (int64_t p = 0; p < kContext; ++p)
    rows.push_back({static_cast<int32_t>((p * 104729) % s.vocab_size), p, ctx.kv(0), false});
  if (!m.Forward(rows, &logits).ok()) std::abort();
  for (int c = 1; c < kDecodeSeqs; ++c)
    for (size_t b = 0; b < ctx.ptrs[c].size(); ++b)
      std::memcpy(ctx.ptrs[c][b], ctx.ptrs[0][b], KvBlockFloats(s, kBlock) * sizeof(float));
  rows.clear();
  for (int c = 0; c < kDecodeSeqs; ++c) rows.push_back({1 + c, kContext, ctx.kv(c), true});
  // What a step must read: every weight but the embedding table, 8 embedding rows, KV.
  const double weights = static_cast<double>(m.weight_bytes()) -
                         DTypeBytes(s.weight_dtype) * static_cast<double>(s.vocab_size * s.hidden) *
                             (s.tie_embeddings ? 0 : 1);
  const double kv = static_cast<double>(kDecodeSeqs) * (kContext + 1) * s.kv_bytes_per_token();
  const double bytes = weights + 4.0 * kDecodeSeqs * s.hidden + kv;
  std::vector<float> stream(static_cast<size_t>(bytes / 4), 1.0f);
  std::vector<float> sinks(static_cast<size_t>(threads), 0.0f);
  ThreadPool pool(threads);
  auto step = [&] {
    if (!m.Forward(rows, &logits).ok()) std::abort();
  };
  auto read = [&] {  // `threads` contiguous parts, one per task
    const size_t part = stream.size() / static_cast<size_t>(threads) / 32 * 32;
    pool.ParallelFor(threads, [&](int64_t t) {
      float acc[32] = {};
      const float* p = stream.data() + static_cast<size_t>(t) * part;
      for (size_t i = 0; i < part; i += 32)
        for (int l = 0; l < 32; ++l) acc[l] += p[i + l];
      for (float a : acc) sinks[static_cast<size_t>(t)] += a;
    });
  };
  auto t = Interleaved({step, read}, s.hidden >= 1024 ? 10 : 40);
  float sink = 0;
  for (float v : sinks) sink += v;
  if (sink == 42) std::printf(" ");  // keep the read
  report->Add({"decode 8 seqs at 512 context, " + Threads(threads) + ", " + tag, kDecodeSeqs / t[0],
               "tokens/s", true, "", std::nullopt, ""});
  report->Add(
      {"decode step bytes read, " + Threads(threads) + ", " + tag, bytes / t[0] / 1e9, "GB/s", true,
       "memory bandwidth (streaming read of the same bytes, " + Threads(threads) + ")",
       bytes / t[1] / 1e9,
       std::to_string(static_cast<int64_t>(bytes / 1e6)) + " MB per step; goal ratio >= 0.5"});
}

// A Qwen2.5-0.5B-like shape (the storage figures; see the header comment).
ModelShape Qwen05Shape() {
  ModelShape s;
  s.name = "qwen2-0.5b-like";
  s.arch = Arch::kQwen2;
  s.vocab_size = 151936;
  s.hidden = 896;
  s.layers = 24;
  s.heads = 14;
  s.kv_heads = 2;
  s.head_dim = 64;
  s.intermediate = 4864;
  s.tie_embeddings = true;
  s.rope_theta = 1000000.0;
  s.seed = 11;
  return s;
}

// Resident bytes of this process after returning freed heap memory to the system.
double ResidentBytes() {
  malloc_trim(0);
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

constexpr int64_t kStorageContext = 128;

// bf16 vs fp32 storage of the same (bf16) weights: decode tokens/s, bytes, resident memory.
void WeightStorage(bench::Report* report) {
  ModelShape s = Qwen05Shape();
  s.weight_dtype = DType::kBf16;
  ModelShape sf = s;
  sf.weight_dtype = DType::kF32;
  Weights w = RandomWeights(s);  // rounded to bf16: both storages hold the same values
  auto bf = Model::FromWeights(s, w);
  auto f32 = Model::FromWeights(sf, std::move(w));
  if (!bf.ok() || !f32.ok()) {
    std::fprintf(stderr, "bench engine: %s\n", (bf.ok() ? f32 : bf).status().ToString().c_str());
    return;
  }
  std::fprintf(stderr, "bench engine: %s\n", (*bf)->shape().Describe().c_str());
  const int threads = (*bf)->threads();
  // One context prefilled (both models write the same KV bits), copied to the other 7.
  Contexts ctx(s, kDecodeSeqs, kStorageContext + 1);
  std::vector<Row> rows;
  std::vector<float> logits;
  for (int64_t p = 0; p < kStorageContext; ++p)
    rows.push_back({static_cast<int32_t>((p * 104729) % s.vocab_size), p, ctx.kv(0), false});
  if (!(*bf)->Forward(rows, &logits).ok()) std::abort();
  for (int c = 1; c < kDecodeSeqs; ++c)
    for (size_t b = 0; b < ctx.ptrs[c].size(); ++b)
      std::memcpy(ctx.ptrs[c][b], ctx.ptrs[0][b], KvBlockBytes(s, kBlock));
  rows.clear();
  for (int c = 0; c < kDecodeSeqs; ++c) rows.push_back({1 + c, kStorageContext, ctx.kv(c), true});
  auto step = [&](const Model& m) {
    return [&] {
      if (!m.Forward(rows, &logits).ok()) std::abort();
    };
  };
  auto t = Interleaved({step(**bf), step(**f32)}, 10);
  const std::string tag = s.name + " (random weights), " + Threads(threads);
  report->Add({"decode 8 seqs at 128 context, bf16 weights, " + tag, kDecodeSeqs / t[0], "tokens/s",
               true, "the same weights stored as fp32", kDecodeSeqs / t[1],
               "bit-identical logits; the step reads every weight once"});
  const double bb = static_cast<double>((*bf)->weight_bytes());
  const double fb = static_cast<double>((*f32)->weight_bytes());
  report->Add({"weight bytes as stored, bf16, " + s.name, bb / 1e6, "MB", false, "fp32 storage",
               fb / 1e6, "packed panels, tied embedding once, norms and biases fp32"});
  const double r0 = ResidentBytes();
  bf.value().reset();
  const double r1 = ResidentBytes();
  f32.value().reset();
  const double r2 = ResidentBytes();
  report->Add({"resident memory freed with the model, bf16 weights, " + s.name, (r0 - r1) / 1e6,
               "MB", false, "fp32 weights", (r1 - r2) / 1e6, "RSS drop after malloc_trim"});
}

}  // namespace

void KvExportImport(const Model& model, bench::Report* report);  // kv_move_bench.cc

namespace {

void ReportEngine(const std::map<std::string, bench::Measured>&, bench::Report* report) {
  auto tiny = Model::Load(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-4l.json");
  if (!tiny.ok()) {
    std::fprintf(stderr, "bench engine: %s\n", tiny.status().ToString().c_str());
    return;
  }
  UseSingleThreadedBlas();
  if (std::getenv("SY_ENGINE_BENCH_STORAGE_ONLY") != nullptr) {
    WeightStorage(report);
    return;
  }
  // SY_ENGINE_BENCH_KV_ONLY=1: only the KV export/import figures (quick side-by-side runs).
  if (std::getenv("SY_ENGINE_BENCH_KV_ONLY") == nullptr) {
    auto large = Model::Random(LargeShape());
    if (!large.ok()) {
      std::fprintf(stderr, "bench engine: %s\n", large.status().ToString().c_str());
      return;
    }
    for (Model* m : {tiny->get(), large->get()}) {
      std::fprintf(stderr, "bench engine: %s\n", m->shape().Describe().c_str());
      PrefillAndLinear(*m, report);
      Decode(*m, report);
    }
    WeightStorage(report);
  }
  KvExportImport(**tiny, report);
}

SY_BENCH_REPORT(engine, ReportEngine);

}  // namespace
}  // namespace switchyard::cpu_engine
