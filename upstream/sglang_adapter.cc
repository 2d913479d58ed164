// The SGLang adapter. GET /get_server_info returns the server's arguments:
//   disable_radix_cache false        prefix caching: warm-ups after demote or discard
//   enable_priority_scheduling true  `priority` (higher values first unless
//                                    schedule_low_priority_values_first)
//   enable_session_radix_cache true  `session_id` tags the session's KV in the radix cache,
//                                    and POST /close_session {"session_id"} frees it: sent
//                                    when the wait's decision is discard and at release
// A build whose sessions must be opened first is declared (open_session): its sessions are
// opened with POST /open_session {"capacity_of_str_len", "session_id"} before their first
// request and closed at release (not on discard, which would end them).
// Demote has no per-session control in SGLang (its hierarchical cache moves KV to host
// memory by itself), so it sends nothing.
#include <string>

#include "upstream/internal/adapters.h"

namespace switchyard::upstream::internal {
namespace {

using nlohmann::json;

constexpr std::string_view kInfo = "/get_server_info";

bool Flag(const json& info, const char* key, bool want) {
  auto it = info.find(key);
  return it != info.end() && it->is_boolean() && it->get<bool>() == want;
}

UpstreamCall Close(const SessionRef& session, const char* why) {
  UpstreamCall call =
      PostCall(CallKind::kClose, "/close_session", json{{"session_id", session.key}},
               std::string("close session ") + session.key + " (" + why + ")");
  return call;
}

class SglangAdapter final : public UpstreamAdapter {
 public:
  explicit SglangAdapter(AdapterOptions options) : options_(std::move(options)) {}
  UpstreamKind kind() const override { return UpstreamKind::kSglang; }

  std::vector<UpstreamCall> ProbeRequests() const override {
    return {ProbeCall(std::string(kInfo))};
  }

  Capabilities ReadProbe(const std::vector<ProbeAnswer>& answers) const override {
    Capabilities caps;
    const json info = ProbeJson(answers, kInfo);
    if (!info.is_object()) return caps;
    const std::string from = "GET " + std::string(kInfo) + " ";
    if (Flag(info, "disable_radix_cache", false)) {
      caps.prefix_caching = {true, from + "disable_radix_cache=false"};
    }
    if (Flag(info, "enable_priority_scheduling", true)) {
      caps.priority = {true, from + "enable_priority_scheduling=true"};
      caps.priority_low_first = Flag(info, "schedule_low_priority_values_first", true);
    }
    if (Flag(info, "enable_session_radix_cache", true)) {
      caps.session_id = {true, from + "enable_session_radix_cache=true"};
      caps.close_session = caps.session_id;
    }
    return caps;
  }

  void Decorate(const Capabilities& caps, const SessionRef& session, KvAction, int priority,
                json* body, std::map<std::string, std::string>*) const override {
    if (caps.session_id.on) (*body)["session_id"] = session.key;
    if (caps.priority.on) (*body)["priority"] = caps.priority_low_first ? -priority : priority;
  }

  std::vector<UpstreamCall> OnOpen(const Capabilities& caps,
                                   const SessionRef& session) const override {
    if (!caps.open_session.on) return {};
    return {PostCall(
        CallKind::kOpen, "/open_session",
        json{{"capacity_of_str_len", options_.session_capacity_chars}, {"session_id", session.key}},
        "open session " + session.key)};
  }

  std::vector<UpstreamCall> OnWait(const Capabilities& caps, const SessionRef& session,
                                   KvAction decision) const override {
    if (decision != KvAction::kDiscard || !caps.close_session.on || caps.open_session.on) {
      return {};
    }
    return {Close(session, "discard")};
  }

  Result<std::vector<UpstreamCall>> OnPrefetch(const Capabilities& caps, const SessionRef& session,
                                               KvAction last,
                                               const WarmupPrefix& prefix) const override {
    return WarmupCalls(*this, caps, session, last, prefix);
  }

  std::vector<UpstreamCall> OnRelease(const Capabilities& caps,
                                      const SessionRef& session) const override {
    if (!caps.close_session.on && !caps.open_session.on) return {};
    UpstreamCall call = Close(session, "release");
    call.background = true;
    return {call};
  }

 private:
  AdapterOptions options_;
};

}  // namespace

std::unique_ptr<UpstreamAdapter> NewSglangAdapter(const AdapterOptions& options) {
  return std::make_unique<SglangAdapter>(options);
}

}  // namespace switchyard::upstream::internal
