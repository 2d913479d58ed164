// OpenAiFront::Call: one request in flight, shared by the front's files (openai_front.cc,
// openai_front_engine.cc, openai_front_proxy.cc); not for other code.
//
// Thread-safety: set up on a server thread before the call is handed out; then `output`,
// `sent`, `eos`, `stopped` and `stream` (once opened) are guarded by `mu` (tokens arrive
// on the scheduler's thread), `answered` is atomic, and the rest is read only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "frontends/openai/openai_front.h"
#include "frontends/openai/openai_request.h"
#include "frontends/openai/openai_response.h"
#include "frontends/session.h"
#include "http/http.h"

namespace switchyard::frontends {

struct OpenAiFront::Call {
  http::HttpRequest original;  // proxy mode: forwarded as it came
  openai::Request req;
  Sessions::Turn turn;          // its tenant, session, workflow, node and context
  std::string model;            // the served id the request's model names (proxy mode: "")
  std::vector<int32_t> prompt;  // the whole prompt's token ids
  int64_t max_tokens = 0, deadline_ms = 0;
  int priority = 0;
  // A forced tool call: the tool, the call's id and the argument the model generates.
  std::optional<openai::ToolDef> tool;
  std::string call_id, arg_name;
  Respond respond;
  std::shared_ptr<http::ResponseStream> stream;
  openai::Response head;
  std::atomic<bool> answered{false};
  Mutex mu;  // guards the output below (tokens arrive on the scheduler's thread)
  std::vector<int32_t> output GUARDED_BY(mu);
  std::string sent GUARDED_BY(mu);  // streamed text so far
  bool eos GUARDED_BY(mu) = false;
  bool stopped GUARDED_BY(mu) = false;
  // Proxy mode: the upstream's whole answer, sent once waits started. Not under mu: set
  // before the turn ends, read by the end's callback only (handed over by EndTurn).
  http::HttpResponse proxied;
};

}  // namespace switchyard::frontends
