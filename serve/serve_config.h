// ServeSetup: what `switchyard serve` runs with. MakeServeSetup() takes the config file's
// ServiceConfig, applies the command line's overrides and the embedded defaults
// (127.0.0.1:8470, ./var, 2 HTTP threads, the simulated engine), and checks every
// value, so that a bad setting stops the server before it opens its data directory, with
// an error naming the setting (its flag and config field) and the value it got.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/http_server.h"
#include "proto/switchyard/v1/api.pb.h"
#include "serve/http_api.h"
#include "service/service.h"

namespace switchyard::serve {

// Command-line values; an empty one leaves the config file's (or the default).
struct ServeFlags {
  std::string listen;        // --listen HOST:PORT
  std::string data_dir;      // --data-dir DIR
  std::string llm;           // --llm simulated|reported
  std::string engine;        // --engine simulated|cpu
  std::string model;         // --model FILE_OR_DIR (engine cpu; default: the demo)
  std::string weight_dtype;  // --weight-dtype f32|bf16 (engine cpu)
  std::string kv_dtype;      // --kv-dtype f32|bf16 (engine cpu)
  int64_t kv_pool_mib = 0;   // --kv-pool-mib N (engine cpu; 0: the config's or 256)
  // --kv-offload-mib N (engine cpu): a host offload tier of N MiB per worker for its prefix
  // cache (vLLM's native CPU offloading; cpu_engine/offload_cache.h); 0: none.
  int64_t kv_offload_mib = 0;
  // --prefix-caching on|off (engine cpu; default on): automatic prefix caching across
  // requests and sessions (vLLM's APC); off recomputes every prompt the pool does not hold
  // for its own context, as an engine without it does.
  std::string prefix_caching;
  std::vector<std::string> upstreams;  // --upstream URL[#API][,URL[#API]...] (proxy mode)
  std::string upstream_api;            // --upstream-api same|chat (of URLs without #API)
  std::string upstream_key;            // --upstream-key TOKEN
  std::string upstream_kind;           // --upstream-kind generic|vllm|sglang|llamacpp
  std::string upstream_steering;       // --upstream-steering on|off (default on)
  // --upstream-load-interval-ms N: each upstream's /metrics read every N ms (0: never;
  // unset: the config's `upstreamLoadIntervalMs`, else 1000).
  std::optional<int64_t> upstream_load_interval_ms;
  // --upstream-kv-events ENDPOINT[,ENDPOINT...] (config `upstreamKvEvents`): each
  // upstream's KV event publisher, by index ("" for none).
  std::vector<std::string> upstream_kv_events;
  std::string links;  // --links FILE (a link file; config linksFile)
  // --policy SPEC: the scheduler policy (config `policy`; a scheduler::CreatePolicy spec:
  // "switchyard", a reference policy such as "vllm-fcfs", or "switchyard:key=value").
  std::string policy;
  // --disaggregation colocated|always|auto (config `disaggregation`) and --worker-roles
  // ROLE[,ROLE...] (config `workerRoles`: serve's own workers' roles, in order).
  std::string disaggregation;
  std::vector<std::string> worker_roles;
  // --response-retention-s N: stored OpenAI Responses are kept N seconds (0: forever; -1,
  // unset: ServiceOptions::document_retention_s, 30 days).
  int64_t response_retention_s = -1;
};

struct ServeSetup {
  http::HttpServerOptions http;
  service::ServiceOptions service;
  HttpApiOptions api;
  std::string data_dir;  // also service.data_dir; tokens are written below it
};

Result<ServeSetup> MakeServeSetup(const v1::ServiceConfig& config, const ServeFlags& flags);

}  // namespace switchyard::serve
