// FrontCore::Call: one call in flight, shared by the core's files (front_core.cc,
// front_core_engine.cc, front_core_proxy.cc); not for other code.
//
// Thread-safety: set up on a server thread before the call is handed out; then `output`,
// `sent`, `eos`, `stopped`, `stream` (once opened) and the reply's stream state are
// guarded by `mu` (tokens arrive on the scheduler's thread), `answered` is atomic, and
// the rest is read only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "frontends/conversation_names.h"
#include "frontends/front_core.h"
#include "frontends/prompt.h"
#include "frontends/session.h"
#include "http/http.h"

namespace switchyard::frontends {

struct FrontCore::Call {
  FrontRequest req;
  std::unique_ptr<Reply> reply;
  Respond respond;
  Sessions::Turn turn;          // its tenant, session, workflow, node and context
  CallHead head;                // set once the turn began
  std::string model;            // the served id the request's model names (proxy mode: "")
  std::vector<int32_t> prompt;  // the whole prompt's token ids
  int64_t max_tokens = 0;
  std::shared_ptr<const PromptFormat> format;  // the model's
  // A forced tool call: the tool, the call's id and the schema its arguments follow (the
  // engine generates them constrained to it).
  std::optional<ToolDef> tool;
  std::string call_id, schema;
  bool parse_calls = false;  // the answer's text is parsed for calls in the model's syntax
  std::shared_ptr<http::ResponseStream> stream;
  std::atomic<bool> answered{false};
  Mutex mu;  // guards the output below (tokens arrive on the scheduler's thread)
  std::vector<int32_t> output GUARDED_BY(mu);
  std::string sent GUARDED_BY(mu);  // streamed text so far
  bool eos GUARDED_BY(mu) = false;
  int32_t eos_token GUARDED_BY(mu) = -1;  // the EOS id that ended it
  // parse_calls and streamed: the text so far fed to the family's parser, which holds back
  // what may be a call.
  std::unique_ptr<chat_template::ToolCallStream> calls GUARDED_BY(mu);
  bool stopped GUARDED_BY(mu) = false;
  // Proxy mode: the upstream's whole answer, sent once waits started. Not under mu: set
  // before the turn ends, read by the end's callback only (handed over by EndTurn).
  http::HttpResponse proxied;
  // Proxy mode, a streamed answer: what keeps the client's stream open after the
  // upstream's last byte, until the session is free for its next turn (then reset).
  upstream::UpstreamClient::CloseHold stream_hold;
};

}  // namespace switchyard::frontends
