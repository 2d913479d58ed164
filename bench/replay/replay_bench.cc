// bench_replay: replay speed. A one-hour trace of 10,000 agent workflows (the committed
// agent-sessions fixture repeated, Poisson arrivals at 10,000 / 3,600 s) replayed on the
// 4-node cluster (32 simulated H200 workers) through the real core and runtime. Reports
// scheduler events per second of wall time and the wall time of the whole replay (goal:
// < 60 s on one core), for the switchyard policy against the vllm-fcfs policy on the
// same trace (baseline). Then shared prefixes: the committed Mooncake conversation sample
// (hash_ids -> shared prefixes, `switchyard convert --from mooncake`) replayed under the
// switchyard policy on the memory-bound h100x8-llama70b-tp4 cluster with shared prefixes
// against the same replay without them (baseline): prefill tokens the engines computed,
// mean JCT and P50 TTFT.
#include <cstdio>
#include <string>

#include "bench/common/report.h"
#include "proto/json.h"
#include "replay/cluster.h"
#include "replay/convert.h"
#include "replay/replay.h"

namespace switchyard::replay {
namespace {

std::vector<v1::TraceRecord> OneHourTrace() {
  auto text =
      proto::ReadFile(std::string(SY_SOURCE_DIR) + "/tests/fixtures/agent_sessions_sample.jsonl");
  if (!text.ok()) return {};
  ConvertOptions o;
  o.repeat = 2500;  // 4 sessions x 2500 = 10,000 workflows
  o.rate_per_s = 10000.0 / 3600.0;
  o.tenants = 4;
  o.seed = 1;
  auto recs = ConvertAgentSessions(*text, o);
  return recs.ok() ? *recs : std::vector<v1::TraceRecord>{};
}

void SharedPrefixes(bench::Report* report) {
  auto text = proto::ReadFile(std::string(SY_SOURCE_DIR) +
                              "/tests/fixtures/mooncake_conversation_sample.jsonl");
  auto cluster =
      LoadCluster(std::string(SY_SOURCE_DIR) + "/replay/clusters/h100x8-llama70b-tp4.json");
  if (!text.ok() || !cluster.ok()) {
    std::fprintf(stderr, "bench_replay: cannot read the Mooncake sample or the cluster\n");
    return;
  }
  auto trace = ConvertMooncake(*text, {});
  if (!trace.ok()) {
    std::fprintf(stderr, "bench_replay: %s\n", trace.status().ToString().c_str());
    return;
  }
  ReplayOptions off;
  off.shared_prefixes = false;
  auto with = RunReplay(*trace, *cluster, "switchyard", {});
  auto without = RunReplay(*trace, *cluster, "switchyard", off);
  if (!with.ok() || !without.ok()) {
    std::fprintf(stderr, "bench_replay: %s\n",
                 (!with.ok() ? with.status() : without.status()).ToString().c_str());
    return;
  }
  const std::string base = "no shared prefixes";
  std::string note = std::to_string(trace->size()) + " Mooncake workflows, " +
                     std::to_string(with->prefill_tokens_saved) + " prefix tokens found resident";
  report->Add({"mooncake_prefill_tokens_shared_prefix", static_cast<double>(with->prefill_tokens),
               "tokens", false, base, static_cast<double>(without->prefill_tokens), note});
  report->Add({"mooncake_jct_mean_shared_prefix", with->jct_mean_s, "s", false, base,
               without->jct_mean_s, ""});
  report->Add({"mooncake_ttft_p50_shared_prefix", with->ttft_p50_s, "s", false, base,
               without->ttft_p50_s, ""});
}

void Report(const std::map<std::string, bench::Measured>&, bench::Report* report) {
  SharedPrefixes(report);
  std::vector<v1::TraceRecord> trace = OneHourTrace();
  auto cluster =
      LoadCluster(std::string(SY_SOURCE_DIR) + "/replay/clusters/cluster4-h200x8-llama8b.json");
  if (trace.empty() || !cluster.ok()) {
    std::fprintf(stderr, "bench_replay: cannot build the trace or load the cluster\n");
    return;
  }
  auto sy = RunReplay(trace, *cluster, "switchyard", {});
  auto base = RunReplay(trace, *cluster, "vllm-fcfs", {});
  if (!sy.ok() || !base.ok()) {
    std::fprintf(stderr, "bench_replay: %s\n",
                 (!sy.ok() ? sy.status() : base.status()).ToString().c_str());
    return;
  }
  std::string note = std::to_string(trace.size()) + " workflows, " + std::to_string(sy->events) +
                     " events, " + std::to_string(sy->completed) + " completed";
  report->Add({"events_per_second", sy->events_per_s, "events/s", true, "vllm-fcfs policy",
               base->events_per_s, note});
  report->Add({"one_hour_10k_workflows_wall", sy->wall_s, "s", false, "vllm-fcfs policy",
               base->wall_s, "goal < 60 s on one core"});
}
SY_BENCH_REPORT(replay, Report);

}  // namespace
}  // namespace switchyard::replay
