// The generic adapter: any OpenAI-compatible server. It adds nothing to requests and has
// no endpoints to call; the one thing it does is warm a prefix back before a session's next
// turn, when the operator declared that the upstream caches prefixes (nothing to probe).
#include "upstream/internal/adapters.h"

namespace switchyard::upstream::internal {
namespace {

class GenericAdapter final : public UpstreamAdapter {
 public:
  UpstreamKind kind() const override { return UpstreamKind::kGeneric; }
  std::vector<UpstreamCall> ProbeRequests() const override { return {}; }
  Capabilities ReadProbe(const std::vector<ProbeAnswer>&) const override { return {}; }
  void Decorate(const Capabilities&, const SessionRef&, KvAction, int, nlohmann::json*,
                std::map<std::string, std::string>*) const override {}
  Result<std::vector<UpstreamCall>> OnPrefetch(const Capabilities& caps, const SessionRef& session,
                                               KvAction last,
                                               const WarmupPrefix& prefix) const override {
    return WarmupCalls(*this, caps, session, last, prefix);
  }
};

}  // namespace

std::unique_ptr<UpstreamAdapter> NewGenericAdapter(const AdapterOptions&) {
  return std::make_unique<GenericAdapter>();
}

}  // namespace switchyard::upstream::internal
