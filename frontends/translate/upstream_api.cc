// Upstream APIs as written (see upstream_api.h).
#include "frontends/translate/upstream_api.h"

namespace switchyard::frontends {

Result<UpstreamApi> ParseUpstreamApi(std::string_view name) {
  if (name == "same") return UpstreamApi::kSame;
  if (name == "chat") return UpstreamApi::kChat;
  return Status::InvalidArgument("expected an upstream API of same or chat, got '" +
                                 std::string(name) + "'");
}

std::string_view UpstreamApiName(UpstreamApi api) {
  return api == UpstreamApi::kChat ? "chat" : "same";
}

Result<UpstreamSpec> ParseUpstreamSpec(std::string_view spec, UpstreamApi fallback) {
  UpstreamSpec out;
  out.api = fallback;
  size_t hash = spec.find('#');
  out.url = std::string(spec.substr(0, hash));
  if (hash == std::string_view::npos) return out;
  auto api = ParseUpstreamApi(spec.substr(hash + 1));
  if (!api.ok()) return api.status().Annotate("upstream '" + std::string(spec) + "'");
  out.api = *api;
  return out;
}

}  // namespace switchyard::frontends
