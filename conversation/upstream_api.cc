// Upstream APIs as written (see upstream_api.h).
#include "conversation/upstream_api.h"

namespace switchyard::conversation {

Result<UpstreamApi> ParseUpstreamApi(std::string_view name) {
  if (name == "same") return UpstreamApi::kSame;
  if (name == "chat") return UpstreamApi::kChat;
  return Status::InvalidArgument("expected an upstream API of same or chat, got '" +
                                 std::string(name) + "'");
}

std::string_view UpstreamApiName(UpstreamApi api) {
  return api == UpstreamApi::kChat ? "chat" : "same";
}

Result<UpstreamSpec> ParseUpstreamSpec(std::string_view spec, UpstreamApi api,
                                       upstream::UpstreamKind kind) {
  UpstreamSpec out;
  out.api = api;
  out.kind = kind;
  const size_t hash = spec.find('#');
  out.url = std::string(spec.substr(0, hash));
  if (hash == std::string_view::npos) return out;
  auto refuse = [spec](const std::string& why) {
    return Status::InvalidArgument("upstream '" + std::string(spec) + "': " + why);
  };
  bool api_named = false, kind_named = false;
  std::string_view words = spec.substr(hash + 1);
  while (true) {
    const size_t plus = words.find('+');
    const std::string_view word = words.substr(0, plus);
    if (auto a = ParseUpstreamApi(word); a.ok()) {
      if (api_named) return refuse("a second API '" + std::string(word) + "'");
      out.api = *a;
      api_named = true;
    } else if (auto k = upstream::ParseUpstreamKind(word); k.ok()) {
      if (kind_named) return refuse("a second kind '" + std::string(word) + "'");
      out.kind = *k;
      kind_named = true;
    } else if (Status st = upstream::DeclareCapability(word, &out.declared); !st.ok()) {
      return refuse("'" + std::string(word) +
                    "' is neither an API (same, chat), a kind (generic, vllm, sglang, "
                    "llamacpp) nor a capability (" +
                    st.message() + ")");
    }
    if (plus == std::string_view::npos) break;
    words.remove_prefix(plus + 1);
  }
  return out;
}

}  // namespace switchyard::conversation
