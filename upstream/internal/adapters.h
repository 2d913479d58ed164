// The built-in upstream adapters (one .cc each) and what they share: building calls and
// reading probe answers. Internal to upstream/: callers use AdapterRegistry (adapter.h).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "upstream/adapter.h"

namespace switchyard::upstream::internal {

std::unique_ptr<UpstreamAdapter> NewGenericAdapter(const AdapterOptions& options);
std::unique_ptr<UpstreamAdapter> NewVllmAdapter(const AdapterOptions& options);
std::unique_ptr<UpstreamAdapter> NewSglangAdapter(const AdapterOptions& options);
std::unique_ptr<UpstreamAdapter> NewLlamaCppAdapter(const AdapterOptions& options);

// A GET probe of `path`.
UpstreamCall ProbeCall(std::string path);
// A POST of `body` (JSON; null for none).
UpstreamCall PostCall(CallKind kind, std::string path, const nlohmann::json& body,
                      std::string purpose);

// The body of the 2xx answer to `path`, parsed as JSON; a discarded value when there is
// none (no answer, 404, any other status) or it is not JSON.
nlohmann::json ProbeJson(const std::vector<ProbeAnswer>& answers, std::string_view path);
// The body of the 2xx answer to `path`; "" when none.
std::string ProbeText(const std::vector<ProbeAnswer>& answers, std::string_view path);
// The labels of the first sample of `metric` in Prometheus text `text` ({} when absent):
// vllm:cache_config_info{block_size="16",enable_prefix_caching="True"} 1.0
std::map<std::string, std::string> PrometheusLabels(std::string_view text, std::string_view metric);

// "True"/"true"/"1" (Python's and JSON's spellings).
bool IsTrue(std::string_view value);

// Warm-ups for `last_decision` (none after kKeep or without prefix caching), each
// decorated by `adapter` as the session's own requests are, at priority kWarmupPriority.
inline constexpr int kWarmupPriority = -1;  // below every turn
Result<std::vector<UpstreamCall>> WarmupCalls(const UpstreamAdapter& adapter,
                                              const Capabilities& caps, const SessionRef& session,
                                              KvAction last_decision, const WarmupPrefix& prefix);

}  // namespace switchyard::upstream::internal
