// Warm-ups: a request that makes an upstream with prefix caching compute (or load) the
// prefix a session's next turn will extend, shortly before that turn comes.
//
// The prefix is the session's last forwarded request with the upstream's answer appended
// as the assistant's turn: what the next turn re-sends before its tool results. MakeWarmup
// builds that request for the API the session speaks, asking for one token, not streamed
// and not stored, so the upstream's answer is cheap and the prefix stays in its cache.
//
//   path                   the answer is appended as                  one token
//   /v1/chat/completions   a last `messages` entry, role assistant    max_tokens: 1
//   /v1/messages           a last `messages` entry, role assistant    max_tokens: 1
//   /v1/responses          a last `input` item, role assistant        max_output_tokens: 1
//   /v1/completions        text after `prompt`                        max_tokens: 1
//
// An answer given as a string is the assistant's text; as JSON of the API's own shape it
// is taken as is (a chat assistant message object with its tool_calls, Messages content
// blocks, Responses output items), so a turn that called tools is warmed with its calls.
// Everything else of the request is kept (model, tools, system, templates' inputs: they
// are part of the prompt), except what would make the answer long, streamed, stored or
// plural (stream, stream_options, max_completion_tokens, n, store, background).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "upstream/upstream_call.h"

namespace switchyard::upstream {

struct WarmupPrefix {
  std::string path;        // the API the session uses, e.g. "/v1/chat/completions"
  nlohmann::json request;  // the last request forwarded for the session (its JSON body)
  nlohmann::json answer;   // the upstream's answer: text, or the API's own shape
};

// The warm-up request (kind kWarmup, POST to prefix.path, background). InvalidArgument
// naming the path (and the supported ones), or the request field that is missing or of
// the wrong type.
Result<UpstreamCall> MakeWarmup(const WarmupPrefix& prefix);

}  // namespace switchyard::upstream
