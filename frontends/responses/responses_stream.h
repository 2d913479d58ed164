// ResponsesStream: the server-sent events of a streamed Responses API answer, in the order
// OpenAI sends them and its SDKs' stream accumulators expect:
//
//   response.created, response.in_progress                      (Start)
//   per output item, in output order:
//     response.output_item.added
//     a message:       response.content_part.added, response.output_text.delta...,
//                      response.output_text.done, response.content_part.done
//     a function call: response.function_call_arguments.delta,
//                      response.function_call_arguments.done
//     response.output_item.done
//   response.completed | response.incomplete | response.failed   (Finish or Fail)
//
// Each event is "event: <type>\ndata: <json>\n\n" and carries a sequence_number, 0, 1, 2,...
// An item is added before its deltas and done exactly once; a message opened by Text() is
// closed by the next ToolCall(), Finish() or Fail(). Item ids are OutputItemId's, so the
// output that ApplyAnswer builds from the same answer (its text, then its calls) names the
// same items; pass that response to Finish. After Finish or Fail every call returns "".
//
// Thread-safety: none; one stream per response, used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "frontends/conversation_names.h"
#include "frontends/responses/responses_object.h"

namespace switchyard::frontends::responses {

class ResponsesStream {
 public:
  // `routes`: the request's (CreateRequest::routes), to name calls as the client declared them.
  explicit ResponsesStream(std::vector<ToolRoute> routes = {});

  // response.created and response.in_progress for `head` (NewResponse's: in_progress, no
  // output).
  std::string Start(const StoredResponse& head);
  // Text of the answer: opens a message item on the first non-empty delta, then
  // response.output_text.delta. An empty delta writes nothing; bytes that end inside a UTF-8
  // sequence wait for the next delta (or the message's close), so no character is split.
  std::string Text(std::string_view delta);
  // One complete call: closes an open message, then the function_call item's events (the
  // arguments in one delta).
  std::string ToolCall(const frontends::ToolCall& call);
  // Closes an open message (incomplete when `final` is) and sends `final` (ApplyAnswer's) as
  // response.completed, response.incomplete or response.failed, by its status.
  std::string Finish(const StoredResponse& final);
  // response.failed for `s` (the head with FailResponse's error and the items streamed so
  // far); before Start, an "error" event instead.
  std::string Fail(const Status& s);

  bool finished() const { return finished_; }

 private:
  std::string OpenMessage();
  std::string CloseMessage(bool complete);
  std::string Terminal(const StoredResponse& r);

  std::vector<ToolRoute> routes_;
  StoredResponse head_;
  std::vector<Item> items_;  // streamed so far
  std::string pending_;      // text ending inside a UTF-8 sequence, held for the next delta
  bool started_ = false, finished_ = false, message_open_ = false;
  int64_t sequence_ = 0;
};

}  // namespace switchyard::frontends::responses
