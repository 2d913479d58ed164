// UpstreamStreamReader: what proxy mode learns from an upstream's streamed answer as its
// pieces pass through to the client — the names of the tool calls it makes (the session's
// wait is named after them) and its output tokens. Each protocol's Reply makes one
// (Reply::NewUpstreamStreamReader) that reads its own events.
//
// The reader splits the body (server-sent events) into lines; a line may be split across
// pieces anywhere. Only the line not yet ended is kept, never the stream: a line longer than
// kMaxLineBytes is skipped (what it said is lost). Each "data:" line goes to the protocol's
// Data(); what a line cannot be read as (not JSON, not the types it should have) is left out.
//
// Ownership: the caller owns the reader. Thread-safety: one thread at a time (the upstream
// client's, in the stream's order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace switchyard::upstream {

// An upstream's JSON is not trusted to have the types it should: the integer or string
// `key` of object `o`, else `fallback` (o need not be an object).
int64_t UpstreamInt(const nlohmann::json& o, const char* key, int64_t fallback);
std::string UpstreamString(const nlohmann::json& o, const char* key);

class UpstreamStreamReader {
 public:
  static constexpr size_t kMaxLineBytes = 4 << 20;

  virtual ~UpstreamStreamReader() = default;

  // The next piece of the body.
  void Read(std::string_view bytes);
  // After the last piece: the tool calls' names in the order of their index in the answer
  // ("tool" where a call had no name), and the output tokens the stream reported (0 if none).
  void End(std::vector<std::string>* tools, int64_t* output_tokens);

 protected:
  // One "data:" line's payload (without "data:" and the space after it).
  virtual void Data(std::string_view payload) = 0;

  // The tool call at `index` in the answer; a later `name` for the same index replaces
  // the first unless empty.
  void Tool(int64_t index, const std::string& name);
  void OutputTokens(int64_t n) { output_tokens_ = n; }

 private:
  void Line(std::string_view line);

  std::string partial_;    // the line not yet ended
  bool skipping_ = false;  // the line not yet ended outgrew kMaxLineBytes
  std::map<int64_t, std::string> tools_;
  int64_t output_tokens_ = 0;
};

}  // namespace switchyard::upstream
