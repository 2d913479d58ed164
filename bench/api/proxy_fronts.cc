// The front doors the proxy bench drives (see proxy_fronts.h).
#include "bench/api/proxy_fronts.h"

namespace switchyard::bench {

namespace {

// The raw JSON string that follows the first `key` (with its colon: the fronts write
// compact JSON) after `anchor` in `body`; "\"\"" when there is none.
std::string StringAfter(const std::string& body, const std::string& anchor,
                        const std::string& key) {
  size_t a = body.find(anchor);
  size_t k = a == std::string::npos ? a : body.find(key, a);
  if (k == std::string::npos) return "\"\"";
  size_t q = k + key.size();
  if (q >= body.size() || body[q] != '"') return "\"\"";
  size_t i = q + 1;
  while (i < body.size() && body[i] != '"') i += body[i] == '\\' ? 2 : 1;
  return i < body.size() ? body.substr(q, i - q + 1) : "\"\"";
}

std::string Quoted(const std::string& model) { return "\"" + model + "\""; }

// Chat Completions and Messages: the same body.
std::string MessagesBody(const std::string& model, const std::string& messages) {
  return "{\"model\":" + Quoted(model) + ",\"messages\":[" + messages +
         "],\"max_tokens\":4,\"temperature\":0}";
}

std::string ChatText(const std::string& body) {
  return StringAfter(body, "\"message\"", "\"content\":");
}

std::string MessagesText(const std::string& body) {
  return StringAfter(body, "\"content\"", "\"text\":");
}

std::string ResponsesBody(const std::string& model, const std::string& messages) {
  return "{\"model\":" + Quoted(model) + ",\"input\":[" + messages +
         "],\"max_output_tokens\":4,\"temperature\":0,\"store\":false}";
}

std::string ResponsesText(const std::string& body) {
  return StringAfter(body, "\"output_text\"", "\"text\":");
}

}  // namespace

std::vector<ProxyFront> ProxyFronts(const std::string& only) {
  std::vector<ProxyFront> all = {
      {"openai_proxy", "chat completions", "/v1/chat/completions", "x-session-id", MessagesBody,
       ChatText},
      {"anthropic_proxy", "Messages", "/v1/messages", "x-claude-code-session-id", MessagesBody,
       MessagesText},
      {"responses_proxy", "Responses (store false)", "/v1/responses", "session_id", ResponsesBody,
       ResponsesText},
  };
  if (only.empty()) return all;
  std::vector<ProxyFront> picked;
  for (ProxyFront& f : all)
    if (("," + only + ",").find("," + f.prefix + ",") != std::string::npos)
      picked.push_back(std::move(f));
  return picked;
}

std::string MessageJson(const std::string& role, const std::string& content_json) {
  return "{\"role\":\"" + role + "\",\"content\":" + content_json + "}";
}

}  // namespace switchyard::bench
