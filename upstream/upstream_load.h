// Reading an upstream engine's load from its Prometheus /metrics, so that proxy mode's
// placement sees what the engine runs for every client, not only the calls Switchyard sent
// it (docs/design.md "Upstreams").
//
// ParsePrometheusText reads the text exposition format (version 0.0.4: `# HELP` / `# TYPE`
// comments, then `name{label="value",...} value [timestamp]` per line). LoadOf picks the
// gauges each engine exposes:
//   vLLM       vllm:num_requests_running, vllm:num_requests_waiting,
//              vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before 0.10)
//   SGLang     sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage
//   llama.cpp  llamacpp:requests_processing, llamacpp:requests_deferred,
//              llamacpp:kv_cache_usage_ratio (`llama-server --metrics`)
//   Switchyard switchyard_scheduler_running_nodes, switchyard_scheduler_queued_nodes (no
//              KV share: its HBM tiers also hold idle sessions' contexts, which no decode
//              step reads)
// Counts are summed over an engine's label sets (one per data-parallel engine), the KV
// share averaged. The upstream's declared kind is tried first, then the others (a generic
// upstream is whichever engine answers).
//
// LoadMonitor scrapes every upstream's /metrics on a period through the proxy's
// UpstreamClient and hands each reading on (proxy mode reports it to the scheduler:
// executors::Generation::ReportLoad). A scrape still out when the next is due is not
// doubled; an upstream without /metrics (404) or with one the parser refuses keeps its
// reason in the status and is tried again next period.
//
// Thread-safety: the functions are pure. LoadMonitor's methods may be called from any
// thread; `on_load` runs on an upstream client thread, never under the monitor's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "upstream/adapter.h"
#include "upstream/upstream_client.h"

namespace switchyard::upstream {

// Every sample of a scrape by metric name: its label set (as written between the braces,
// "" for none) and value.
using PromSamples = std::map<std::string, std::vector<std::pair<std::string, double>>>;
// InvalidArgument naming the line (1-based) and what is wrong with it.
Result<PromSamples> ParsePrometheusText(std::string_view text);

// An upstream's load as its gauges say (-1: not exposed), and which engine's names said it.
struct UpstreamLoad {
  double running = -1;   // requests in its running batch
  double waiting = -1;   // requests queued for a place in it
  double kv_usage = -1;  // share of its KV cache in use, 0..1
  std::string engine;    // "vllm", "sglang", "llamacpp" or "switchyard"
};
// nullopt when no engine's running or waiting gauge is in `samples`.
std::optional<UpstreamLoad> LoadOf(UpstreamKind kind, const PromSamples& samples);

class LoadMonitor {
 public:
  struct Options {
    int interval_ms = 1000;
    std::string auth;                 // Authorization sent with each scrape ("" none)
    std::vector<UpstreamKind> kinds;  // by upstream index; missing: generic
  };
  // One upstream's scrapes, for /v1/cluster.
  struct Scrapes {
    uint64_t scrapes = 0;  // answered with a load
    uint64_t failures = 0;
    std::optional<UpstreamLoad> last;  // the last reading
    std::string error;                 // why the last scrape gave none ("" when it did)
  };
  using OnLoad = std::function<void(size_t upstream, const UpstreamLoad& load)>;

  // Starts scraping at once, then every interval_ms. `client` must outlive the monitor.
  LoadMonitor(UpstreamClient* client, Options options, OnLoad on_load);
  ~LoadMonitor();  // stops; a scrape still out ends without calling on_load
  LoadMonitor(const LoadMonitor&) = delete;
  LoadMonitor& operator=(const LoadMonitor&) = delete;

  std::vector<Scrapes> status() const;

  struct State;  // upstream_load.cc

 private:
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::upstream
