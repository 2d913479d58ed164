// The front doors the proxy bench (openai_proxy_bench.cc) drives, the same way each: Chat
// Completions, Anthropic Messages and OpenAI Responses. A front is its path, its request
// body for a conversation (a JSON array of {"role","content"} messages: `messages` for
// chat and Messages, `input` for Responses, which keeps nothing: store false), the header
// that names a session, and where its answer's text is, so a session's next turn can carry
// it. Every request asks for 4 output tokens at temperature 0.
//
// Thread-safety: constant data and pure functions.
#pragma once

#include <string>
#include <vector>

namespace switchyard::bench {

struct ProxyFront {
  std::string prefix;          // the result names' prefix ("openai_proxy", ...)
  std::string what;            // for the notes ("chat completions", ...)
  std::string path;            // "/v1/chat/completions", ...
  std::string session_header;  // a header line's name: "x-session-id", ...
  // The body for the conversation `messages` (JSON objects, comma-separated) of `model`.
  std::string (*body)(const std::string& model, const std::string& messages);
  // The raw JSON string (quotes and escapes kept) of a whole answer's text; "\"\"" when
  // there is none (e.g. only tool calls).
  std::string (*answer_text)(const std::string& body);
};

// Chat Completions, Messages, Responses; `only` (comma-separated prefixes, "" for all)
// picks some.
std::vector<ProxyFront> ProxyFronts(const std::string& only);

// A message of the conversation: {"role":<role>,"content":<content_json>}.
std::string MessageJson(const std::string& role, const std::string& content_json);

}  // namespace switchyard::bench
