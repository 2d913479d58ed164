// program_graph suite: append + readiness tracking at 10,000 nodes, in three shapes, against
// a same-run naive baseline that rescans every node for readiness after each completion.
//
// Shapes: "chain" (an agent loop: LLM and tool steps alternate, each appended one at a
// time after the previous step succeeded, every LLM step extending one KV context),
// "fanout" (one planner, 9,999 parallel tool calls, appended in one batch), and "layered"
// (100 layers of 100 nodes, each depending on 4 nodes of the layer before).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/common/report.h"
#include "program_graph/workflow.h"

namespace switchyard::program_graph {
namespace {

constexpr int kNodes = 10000;

v1::ProgramNode Node(int k, v1::NodeKind kind) {
  v1::ProgramNode n;
  n.set_id("n" + std::to_string(k));
  n.set_kind(kind);
  n.mutable_hints()->set_max_output_tokens(100);
  n.mutable_hints()->set_expected_duration_ms(200);
  return n;
}

// Batches to append, in order; each batch's deps name nodes of earlier batches or itself.
std::vector<std::vector<v1::ProgramNode>> Shape(const std::string& shape) {
  std::vector<std::vector<v1::ProgramNode>> batches;
  if (shape == "chain") {
    for (int k = 0; k < kNodes; ++k) {
      auto n = Node(k, k % 2 ? v1::TOOL : v1::LLM);
      if (k > 0) n.add_deps("n" + std::to_string(k - 1));
      if (k % 2 == 0) {
        auto* ref = n.add_cache_refs();
        ref->set_context("main");
        ref->set_mode(k == 0 ? v1::CacheRef::CREATE : v1::CacheRef::EXTEND);
      }
      batches.push_back({n});
    }
  } else if (shape == "fanout") {
    batches.emplace_back();
    batches[0].push_back(Node(0, v1::LLM));
    for (int k = 1; k < kNodes; ++k) {
      batches[0].push_back(Node(k, v1::TOOL));
      batches[0].back().add_deps("n0");
    }
  } else {  // layered
    std::mt19937_64 rng(1);
    batches.emplace_back();
    for (int k = 0; k < kNodes; ++k) {
      auto n = Node(k, k % 3 ? v1::TOOL : v1::LLM);
      int layer = k / 100;
      for (int d = 0; layer > 0 && d < 4; ++d) {
        std::string dep = "n" + std::to_string((layer - 1) * 100 + d * 25 + rng() % 25);
        n.add_deps(dep);
      }
      batches[0].push_back(n);
    }
  }
  return batches;
}

// Readiness only, on a graph built beforehand: run every node to success through the
// newly-ready lists that MarkSucceeded returns.
size_t DriveOurs(Workflow* wf) {
  std::vector<NodeIndex> work = wf->ReadyNodes();
  size_t n = 0;
  while (!work.empty()) {
    NodeIndex i = work.back();
    work.pop_back();
    if (!wf->MarkRunning(i).ok()) std::abort();
    auto ready = wf->MarkSucceeded(i);
    work.insert(work.end(), ready->begin(), ready->end());
    ++n;
  }
  return n;
}

std::unique_ptr<Workflow> Build(const std::vector<std::vector<v1::ProgramNode>>& batches) {
  v1::Workflow header;
  header.set_id("bench");
  auto wf = std::move(Workflow::Create(header, Time{})).value();
  for (const auto& batch : batches) {
    if (!wf->Append(batch, Time{}).ok()) std::abort();
  }
  return wf;
}

// The naive tracker's readiness loop: rescan every node after each completion. States:
// 0 pending, 1 ready, 2 succeeded.
size_t DriveNaive(const std::vector<std::vector<uint32_t>>& deps, std::vector<char>& st) {
  std::vector<uint32_t> ready;
  size_t n = 0;
  for (;;) {
    for (uint32_t i = 0; i < st.size(); ++i) {
      if (st[i] != 0) continue;
      bool ok = true;
      for (uint32_t d : deps[i]) ok &= st[d] == 2;
      if (ok) {
        st[i] = 1;
        ready.push_back(i);
      }
    }
    if (ready.empty()) return n;
    st[ready.back()] = 2;
    ready.pop_back();
    ++n;
  }
}

// Ours: append each batch, then run and succeed nodes as MarkSucceeded reports them ready.
size_t RunOurs(const std::vector<std::vector<v1::ProgramNode>>& batches) {
  v1::Workflow header;
  header.set_id("bench");
  auto wf = std::move(Workflow::Create(header, Time{})).value();
  for (const auto& batch : batches) {
    if (!wf->Append(batch, Time{}).ok()) std::abort();
    DriveOurs(wf.get());
  }
  return wf->size();
}

// Baseline: the same graph, no validation; readiness recomputed by a full scan of all
// nodes (checking every dep) after each completion.
size_t RunNaive(const std::vector<std::vector<v1::ProgramNode>>& batches) {
  std::unordered_map<std::string, uint32_t> index;
  std::vector<std::vector<uint32_t>> deps;
  std::vector<char> st;
  for (const auto& batch : batches) {
    for (const auto& n : batch) index.emplace(n.id(), static_cast<uint32_t>(index.size()));
    for (const auto& n : batch) {
      deps.emplace_back();
      for (const auto& d : n.deps()) deps.back().push_back(index.at(d));
      st.push_back(0);  // pending
    }
    DriveNaive(deps, st);
  }
  return st.size();
}

void BM_Ours(benchmark::State& state, std::string shape) {
  auto batches = Shape(shape);
  for (auto _ : state) benchmark::DoNotOptimize(RunOurs(batches));
  state.SetItemsProcessed(state.iterations() * kNodes);
}

void BM_Naive(benchmark::State& state, std::string shape) {
  auto batches = Shape(shape);
  for (auto _ : state) benchmark::DoNotOptimize(RunNaive(batches));
  state.SetItemsProcessed(state.iterations() * kNodes);
}

void BM_OursReadinessOnly(benchmark::State& state, std::string shape) {
  auto built = Build(Shape(shape));
  for (auto _ : state) {
    state.PauseTiming();
    auto wf = std::make_unique<Workflow>(*built);
    state.ResumeTiming();
    if (DriveOurs(wf.get()) != kNodes) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * kNodes);
}

void BM_NaiveReadinessOnly(benchmark::State& state, std::string shape) {
  auto built = Build(Shape(shape));
  std::vector<std::vector<uint32_t>> deps;
  for (NodeIndex i = 0; i < built->size(); ++i) deps.push_back(built->deps(i));
  for (auto _ : state) {
    std::vector<char> st(deps.size(), 0);
    if (DriveNaive(deps, st) != kNodes) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * kNodes);
}

BENCHMARK_CAPTURE(BM_OursReadinessOnly, chain, std::string("chain"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NaiveReadinessOnly, chain, std::string("chain"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_OursReadinessOnly, layered, std::string("layered"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NaiveReadinessOnly, layered, std::string("layered"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

BENCHMARK_CAPTURE(BM_Ours, chain, std::string("chain"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Naive, chain, std::string("chain"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_Ours, fanout, std::string("fanout"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Naive, fanout, std::string("fanout"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_Ours, layered, std::string("layered"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Naive, layered, std::string("layered"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

void Report(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  for (const char* shape : {"chain", "fanout", "layered"}) {
    auto ours = runs.find(std::string("BM_Ours/") + shape);
    if (ours == runs.end()) continue;
    bench::Result r;
    r.name = std::string("append_readiness_10k_") + shape;
    r.value = ours->second.items_per_second;
    r.unit = "nodes/s";
    auto naive = runs.find(std::string("BM_Naive/") + shape + "/iterations:2");
    if (naive != runs.end()) {
      r.baseline = "naive_rescan";
      r.baseline_value = naive->second.items_per_second;
    }
    r.note = "validate + append + run every node to success";
    report->Add(r);
  }
  for (const char* shape : {"chain", "layered"}) {
    auto ours = runs.find(std::string("BM_OursReadinessOnly/") + shape);
    if (ours == runs.end()) continue;
    bench::Result r;
    r.name = std::string("readiness_only_10k_") + shape;
    r.value = ours->second.items_per_second;
    r.unit = "nodes/s";
    auto naive = runs.find(std::string("BM_NaiveReadinessOnly/") + shape + "/iterations:2");
    if (naive != runs.end()) {
      r.baseline = "naive_rescan";
      r.baseline_value = naive->second.items_per_second;
    }
    r.note = "prebuilt graph: run every node to success";
    report->Add(r);
  }
}
SY_BENCH_REPORT(program_graph_readiness, Report);

}  // namespace
}  // namespace switchyard::program_graph
