// Usage on streamed Chat Completions and Completions answers, for steering.
//
// Steering reads the usage of every answer (the cached tokens that count warm-up hits and
// teach the retention model, retention.h), but an OpenAI-compatible server puts usage in a
// stream only when the request asks for it (`stream_options.include_usage`). AskUsage adds
// that to a streamed request that did not ask; the answer then carries one more event
// before `data: [DONE]`, whose `choices` is empty and whose `usage` is the request's, and
// UsageEventFilter removes that event from what the client gets, so the client sees the
// stream it asked for (the other chunks may carry `"usage": null`, as OpenAI's own do once
// asked; clients take the field as optional).
//
// The filter passes the stream through event by event (an event ends with a blank line,
// "\n\n" or "\r\n\r\n"); an event not yet ended is held, at most kMaxEventBytes (past that
// it passes as it comes and is not examined). Bytes held when the stream ends without a
// blank line are an incomplete event and are dropped.
//
// Thread-safety: UsageEventFilter is used by one thread at a time (the upstream client's,
// in the stream's order).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/http.h"

namespace switchyard::upstream {

// Sets stream_options.include_usage on `req` (a JSON body with "stream": true, sent to
// /v1/chat/completions or /v1/completions) where it was not set; true when it set it (the
// client did not ask: its usage event must not reach it).
bool AskUsage(http::HttpRequest* req);

class UsageEventFilter {
 public:
  static constexpr size_t kMaxEventBytes = 1 << 20;
  // The next piece of the body; returns what the client gets of it.
  std::string Filter(std::string_view bytes);

 private:
  // Whether `event` (one whole event, its blank line included) is the usage event.
  static bool IsUsageEvent(std::string_view event);

  std::string held_;
  bool passing_ = false;  // an overlong event is passing through until its end
};

}  // namespace switchyard::upstream
