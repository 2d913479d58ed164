// ChatStreamReader: a Chat Completions upstream's streamed answer (Server-Sent Events of
// chat.completion.chunk objects) read incrementally into the front-neutral Answer
// (conversation/conversation.h), whatever way its bytes are split:
//
//   data: {chunk}                 choices[0].delta.content -> text (returned as it comes);
//                                 delta.reasoning_content / delta.reasoning -> reasoning;
//                                 delta.tool_calls[] -> tool_calls, by `index` (id and
//                                 function.name from their first piece, function.arguments
//                                 pieces joined); finish_reason (and vLLM's stop_reason)
//                                 -> end; a top-level usage (stream_options.include_usage's
//                                 chunk) -> the counts
//   data: {"error":{...}}         the upstream failed mid-stream (error(), chat_answer.h's
//                                 ChatErrorStatus); nothing after it is read
//   data: [DONE]                  the end
//   event:, id:, retry:, :comment ignored
//
// Lines that are not SSE fields (an upstream that answered a JSON error in a chunked body)
// are kept, up to 64 KiB, and read as an error when the body ends without an answer.
//
// Thread-safety: not thread-safe; one per answer, fed by one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "conversation/conversation.h"

namespace switchyard::conversation::translate {

class ChatStreamReader {
 public:
  // Reads the next piece of the body; returns the text the events it completed add.
  std::string Feed(std::string_view bytes);
  // The body ended: reads a last event not followed by a blank line; returns its text.
  std::string Finish();

  // Whether the answer ended as the upstream meant it to: [DONE] or a finish_reason came,
  // and no error.
  bool whole() const { return error_.ok() && (done_ || finished_); }
  // The error event the upstream sent (or, after Finish, the JSON error body it answered
  // instead of events); OK if none.
  const Status& error() const { return error_; }
  // The answer so far (its calls' ids as the upstream gave them).
  const Answer& answer() const { return answer_; }

 private:
  std::string Line(std::string_view line);  // one line of the body
  std::string Event(const std::string& data);
  std::string Chunk(const std::string& data);

  std::string buffer_;  // an incomplete line
  std::string data_;    // the current event's data lines
  bool has_data_ = false;
  std::string other_;                // lines that are not SSE fields
  std::vector<int64_t> call_index_;  // tool_calls[i]'s `index` in the chunks
  Answer answer_;
  bool done_ = false, finished_ = false;
  Status error_;
};

}  // namespace switchyard::conversation::translate
