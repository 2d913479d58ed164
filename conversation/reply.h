// Reply: how a call's answer is written in the protocol of the front door it came in by
// (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses). FrontCore (front_core.h)
// runs every call the same way — its turn, its generation or its forwarding, its tool
// calls — and asks the call's Reply for the bytes: the whole answer, a stream's events, an
// error in that API's error shape.
//
// Thread-safety: a Reply belongs to one call; FrontCore calls it from one thread at a time
// (the server's thread, then the scheduler's under the call's lock, then the front's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "conversation/conversation.h"
#include "http/http.h"
#include "upstream/upstream_stream.h"

namespace switchyard::conversation {

// What every answer of a call carries, known once its turn began.
struct CallHead {
  std::string workflow, node;  // the call's workflow and LLM node
  int turn = 0;                // the turn's index in its session
  int64_t created = 0;         // seconds since the Unix epoch
  std::string model;           // the served model id; proxy mode: "" (the upstreams')
  int64_t prompt_tokens = 0;   // the prompt's tokens (proxy mode: an estimate)
  int64_t cached_tokens = 0;   // of which the session's context already held
  // What computed the answer: "switchyard-cpu-engine[-random-weights]", or
  // "switchyard-simulated-engine-placeholder-text".
  std::string engine;
};

class Reply {
 public:
  // Where a call failed: before its turn (the model, the prompt), at its session (busy, a
  // bad session id, another model), or once it ran (refused, failed, the workflow ended).
  enum class Stage { kPrepare, kTurn, kRun };

  virtual ~Reply() = default;
  virtual void SetHead(const CallHead& head) = 0;
  // The id of a tool call the answer makes (`index`: its place in the answer).
  virtual std::string ToolCallId(int index) const = 0;

  // Runs before the answer goes out (whole or the stream's end), with the answer; the
  // answer waits for `done` (OK, or the failure it then answers). Default: at once. A
  // protocol that stores its answers (Responses) makes them durable here, so a client that
  // chains on the answer finds it.
  virtual void Commit(const Answer& answer, std::function<void(const Status&)> done) {
    done(Status::OK());
  }

  // A whole answer, and an error answered instead of one.
  virtual http::HttpResponse Whole(const Answer& answer) = 0;
  virtual http::HttpResponse Error(const Status& st, Stage stage) = 0;

  // A stream's bytes: its start (once the call was admitted), text as it settles, the end
  // (tool calls, why it ended, usage), or an error after the start.
  virtual std::string StreamStart() = 0;
  virtual std::string StreamText(std::string_view delta) = 0;
  virtual std::string StreamEnd(const Answer& answer) = 0;
  virtual std::string StreamError(const Status& st) = 0;

  // Proxy mode: the names of the tool calls and the output tokens of an upstream's whole
  // answer (an upstream's answer is not trusted to have the types it should: what is not
  // there is left out), and a reader that learns the same from a streamed answer as it
  // passes (upstream_stream.h; owned by the caller, independent of this Reply).
  virtual void ReadUpstreamAnswer(std::string_view body, std::vector<std::string>* tools,
                                  int64_t* output_tokens) const = 0;
  virtual std::unique_ptr<upstream::UpstreamStreamReader> NewUpstreamStreamReader() const = 0;
};

}  // namespace switchyard::conversation
