// UpstreamApi: which API an upstream of proxy mode speaks, and how a command line or a config
// file says it. An upstream that speaks the API a call came in by (the default) gets the
// call unchanged; one that speaks only OpenAI Chat Completions gets Messages and Responses
// calls translated (chat_request.h) and its answers read back (chat_answer.h,
// chat_stream.h).
//
// An upstream is written "http://host:port", optionally followed by "#" and '+'-separated
// words (`switchyard serve --upstream`, the config file's `upstreams`):
//   - its API, "same" or "chat" (default `--upstream-api`, else "same");
//   - its kind for steering, "generic", "vllm", "sglang" or "llamacpp" (default
//     `--upstream-kind`, else "generic"; upstream/adapter.h);
//   - capabilities the operator declares (upstream::DeclareCapability): "priority",
//     "slot_files", "slots=4", "no-prefix_caching", ...
// e.g. "http://gpu1:8000#vllm+priority", "http://cpu:8080#chat+llamacpp+slots+slot_files".
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "upstream/adapter.h"

namespace switchyard::conversation {

enum class UpstreamApi {
  kSame,  // the API of each call (vLLM, SGLang, another Switchyard): forwarded unchanged
  kChat,  // Chat Completions only: Messages and Responses calls are translated
};

// "same" or "chat"; InvalidArgument naming what it got otherwise.
Result<UpstreamApi> ParseUpstreamApi(std::string_view name);
std::string_view UpstreamApiName(UpstreamApi api);

// An upstream as written: its URL and its API.
struct UpstreamSpec {
  std::string url;
  UpstreamApi api = UpstreamApi::kSame;
  upstream::UpstreamKind kind = upstream::UpstreamKind::kGeneric;
  upstream::Capabilities declared;
};
// Splits "URL[#WORD[+WORD...]]"; `api` and `kind` where the words name none.
// InvalidArgument naming the spec and the word that is neither an API, a kind nor a
// capability, or a second API or kind.
Result<UpstreamSpec> ParseUpstreamSpec(
    std::string_view spec, UpstreamApi api,
    upstream::UpstreamKind kind = upstream::UpstreamKind::kGeneric);

}  // namespace switchyard::conversation
