// What proxy mode reads from an upstream's answer for steering (proxy_steering.h): the
// answer as a warm-up appends it, and the prompt tokens its usage reports as cached.
// Not for use outside upstream/.
//
// StreamAnswerReader reads a streamed answer (server-sent events) of the API at `path`:
// Chat Completions (choices[0].delta.content, and the usage chunk when the request asked
// for it), Messages (text deltas; message_start's usage), Responses (response.completed's
// output and usage) and Completions (choices[0].text). A line split across pieces is
// joined; lines longer than kMaxLineBytes and what is not JSON are skipped. Token ids are
// read as ReadTokenIds says.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace switchyard::upstream::internal {

struct AnswerReading {
  nlohmann::json answer;  // null: none read
  bool usage = false;     // a usage was read
  int64_t cached = 0, prompt = 0;
  int64_t output = -1;  // output tokens its usage reported (-1: none)
  // vLLM's `return_token_ids`: the prompt's token ids (top-level prompt_token_ids, in a
  // stream's first chunk) and the output's (choices[0].token_ids, a stream's chunks in
  // order). Empty prompt_ids: the answer carried none.
  std::vector<int32_t> prompt_ids, output_ids;
};
// Adds what `j` (a whole answer or one stream chunk) carries of vLLM's token ids to `r`.
void ReadTokenIds(const nlohmann::json& j, AnswerReading* r);

class StreamAnswerReader {
 public:
  static constexpr size_t kMaxLineBytes = 4 << 20;
  explicit StreamAnswerReader(std::string path) : path_(std::move(path)) {}
  void Read(std::string_view bytes);
  // What was read so far (the text as the answer when no whole answer came).
  AnswerReading Reading() const;

 private:
  void Line(std::string_view line);
  void Event(const nlohmann::json& j);

  std::string path_;
  std::string partial_;
  bool skipping_ = false;
  std::string text_;
  AnswerReading reading_;
};

}  // namespace switchyard::upstream::internal
