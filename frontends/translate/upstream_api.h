// UpstreamApi: which API an upstream of proxy mode speaks, and how a command line or a config
// file says it. An upstream that speaks the API a call came in by (the default) gets the
// call unchanged; one that speaks only OpenAI Chat Completions gets Messages and Responses
// calls translated (chat_request.h) and its answers read back (chat_answer.h,
// chat_stream.h).
//
// An upstream is written "http://host:port", or "http://host:port#chat" /
// "http://host:port#same" to say its API (`switchyard serve --upstream`, the config file's
// `upstreams`); without a suffix it speaks the default (`--upstream-api`, else "same").
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace switchyard::frontends {

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
};
// Splits "URL[#API]"; `fallback` when there is no "#API". InvalidArgument naming the spec
// for an unknown API.
Result<UpstreamSpec> ParseUpstreamSpec(std::string_view spec, UpstreamApi fallback);

}  // namespace switchyard::frontends
