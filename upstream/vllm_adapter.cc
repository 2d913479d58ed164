// The vLLM adapter. vLLM has no endpoint that moves one session's KV, so every decision
// travels in the session's own requests:
//   - `session_id` and the X-Session-ID header (declared: vLLM builds with a first-class
//     session id), `priority` (declared: --scheduling-policy priority; vLLM serves lower
//     values first);
//   - `kv_transfer_params` of the offloading connector (probed: `kv_offloading_size` in
//     the cache_config_info labels of GET /metrics), after the wait's decision:
//       keep     nothing: no offload cap, loads from every tier
//       demote   offload allowed (no max_offload_tokens), loads from the host tier only:
//                kv_load_tiers [{"medium":"CPU"}]
//       discard  max_load_tokens 0 and max_offload_tokens 0: neither loaded nor stored
//                again; also kv_load_tiers [] for builds without max_load_tokens (loads
//                allowed after a discard measured worse: the loaded blocks take the pool
//                room of the sessions kept and warmed; bench/RESULTS.md);
//   - `return_token_ids` (declared: vLLM 0.10.2 and later), so that each answer carries
//     the prompt's and the output's token ids, which proxy mode matches against the
//     upstream's KV events to see whether a waiting session's KV is still there;
//   - a warm-up before the next turn after demote or discard (probed: enable_prefix_caching
//     in the same labels), which loads the prefix from the host tier or recomputes it.
// Other kv_transfer_params keys a client sent (disaggregated prefill) are kept.
#include <string>

#include "upstream/internal/adapters.h"

namespace switchyard::upstream::internal {
namespace {

using nlohmann::json;

constexpr std::string_view kCacheConfig = "vllm:cache_config_info";

void SetKvTransfer(KvAction last, json* body) {
  if (last == KvAction::kKeep) return;
  json& params = (*body)["kv_transfer_params"];
  if (!params.is_object()) params = json::object();
  if (last == KvAction::kDemote) {
    params.erase("max_offload_tokens");
    params.erase("max_load_tokens");
    params["kv_load_tiers"] = json::array({json{{"medium", "CPU"}}});
  } else {
    params["max_load_tokens"] = 0;
    params["max_offload_tokens"] = 0;
    params["kv_load_tiers"] = json::array();
  }
}

class VllmAdapter final : public UpstreamAdapter {
 public:
  UpstreamKind kind() const override { return UpstreamKind::kVllm; }

  std::vector<UpstreamCall> ProbeRequests() const override {
    return {ProbeCall("/metrics"), ProbeCall("/version")};
  }

  Capabilities ReadProbe(const std::vector<ProbeAnswer>& answers) const override {
    Capabilities caps;
    caps.priority_low_first = true;
    const json version = ProbeJson(answers, "/version");
    const std::string from = version.is_object() && version.value("version", json()).is_string()
                                 ? " (vLLM " + version["version"].get<std::string>() + ")"
                                 : "";
    auto labels = PrometheusLabels(ProbeText(answers, "/metrics"), kCacheConfig);
    const std::string source = "GET /metrics " + std::string(kCacheConfig);
    if (IsTrue(labels["enable_prefix_caching"])) {
      caps.prefix_caching = {true, source + " enable_prefix_caching=True" + from};
    }
    const std::string offload = labels["kv_offloading_size"];
    if (!offload.empty() && offload != "None") {
      caps.kv_transfer_params = {true, source + " kv_offloading_size=" + offload + from};
    }
    return caps;
  }

  void Decorate(const Capabilities& caps, const SessionRef& session, KvAction last, int priority,
                json* body, std::map<std::string, std::string>* headers) const override {
    if (caps.session_id.on) {
      (*body)["session_id"] = session.key;
      (*headers)["x-session-id"] = session.key;
    }
    if (caps.priority.on) (*body)["priority"] = -priority;  // vLLM: lower values first
    if (caps.kv_transfer_params.on) SetKvTransfer(last, body);
    if (caps.token_ids.on) (*body)["return_token_ids"] = true;
  }

  Result<std::vector<UpstreamCall>> OnPrefetch(const Capabilities& caps, const SessionRef& session,
                                               KvAction last,
                                               const WarmupPrefix& prefix) const override {
    return WarmupCalls(*this, caps, session, last, prefix);
  }
};

}  // namespace

std::unique_ptr<UpstreamAdapter> NewVllmAdapter(const AdapterOptions&) {
  return std::make_unique<VllmAdapter>();
}

}  // namespace switchyard::upstream::internal
