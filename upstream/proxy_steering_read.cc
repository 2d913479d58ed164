// Reading upstream answers for steering: usage, the answer a warm-up appends, streams.
#include <algorithm>
#include <utility>

#include "upstream/internal/steering_tap.h"
#include "upstream/proxy_steering.h"

namespace switchyard::upstream {

namespace {

int64_t IntAt(const nlohmann::json& o, const char* a, const char* b) {
  if (!o.is_object() || !o.contains(a)) return -1;
  const nlohmann::json& x = o[a];
  if (b != nullptr) {
    if (!x.is_object() || !x.contains(b)) return -1;
    return x[b].is_number_integer() ? x[b].get<int64_t>() : -1;
  }
  return x.is_number_integer() ? x.get<int64_t>() : -1;
}

// The usage object of an answer or event: at the top, or under "message" or "response".
const nlohmann::json* UsageObject(const nlohmann::json& j) {
  if (!j.is_object()) return nullptr;
  const nlohmann::json* holders[] = {&j, nullptr, nullptr};
  if (auto m = j.find("message"); m != j.end()) holders[1] = &*m;
  if (auto r = j.find("response"); r != j.end()) holders[2] = &*r;
  for (const nlohmann::json* o : holders) {
    if (o == nullptr || !o->is_object()) continue;
    auto u = o->find("usage");
    if (u != o->end() && u->is_object()) return &*u;
  }
  return nullptr;
}

}  // namespace

bool UsageOf(const nlohmann::json& j, int64_t* cached, int64_t* prompt) {
  const nlohmann::json* u = UsageObject(j);
  if (u == nullptr) return false;
  int64_t c = IntAt(*u, "prompt_tokens_details", "cached_tokens");     // Chat Completions
  if (c < 0) c = IntAt(*u, "input_tokens_details", "cached_tokens");   // Responses
  const int64_t read = IntAt(*u, "cache_read_input_tokens", nullptr);  // Messages
  int64_t p = IntAt(*u, "prompt_tokens", nullptr);
  if (p < 0) p = IntAt(*u, "input_tokens", nullptr);
  if (read >= 0) {  // Messages: input_tokens excludes what was read from the cache
    c = read;
    p = std::max<int64_t>(0, p) + read;
  }
  *cached = std::max<int64_t>(0, c);
  *prompt = std::max<int64_t>(0, p);
  return c >= 0 || p >= 0;
}

int64_t OutputTokensOf(const nlohmann::json& j) {
  const nlohmann::json* u = UsageObject(j);
  if (u == nullptr) return -1;
  const int64_t c = IntAt(*u, "completion_tokens", nullptr);  // Chat Completions
  return c >= 0 ? c : IntAt(*u, "output_tokens", nullptr);    // Responses, Messages
}

nlohmann::json AnswerOf(const std::string& path, const nlohmann::json& body) {
  if (!body.is_object()) return nullptr;
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty())
      return nullptr;
    const nlohmann::json& c = body["choices"][0];
    if (path == "/v1/completions") return c.contains("text") ? c["text"] : nlohmann::json();
    return c.contains("message") ? c["message"] : nlohmann::json();
  }
  if (path == "/v1/messages") return body.contains("content") ? body["content"] : nullptr;
  if (path == "/v1/responses") return body.contains("output") ? body["output"] : nullptr;
  return nullptr;
}

namespace internal {

void ReadTokenIds(const nlohmann::json& j, AnswerReading* r) {
  auto ints = [](const nlohmann::json& a, std::vector<int32_t>* out) {
    if (!a.is_array()) return;
    for (const nlohmann::json& t : a)
      if (t.is_number_integer()) out->push_back(t.get<int32_t>());
  };
  if (auto p = j.find("prompt_token_ids"); p != j.end() && p->is_array()) {
    r->prompt_ids.clear();
    ints(*p, &r->prompt_ids);
  }
  auto c = j.find("choices");
  if (c == j.end() || !c->is_array() || c->empty() || !(*c)[0].is_object()) return;
  if (auto t = (*c)[0].find("token_ids"); t != (*c)[0].end()) ints(*t, &r->output_ids);
}

void StreamAnswerReader::Read(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (!skipping_) {
      if (partial_.size() + piece.size() > kMaxLineBytes) {
        skipping_ = true;
        partial_.clear();
      } else {
        partial_.append(piece);
      }
    }
    if (nl == std::string_view::npos) return;
    if (!skipping_) Line(partial_);
    partial_.clear();
    skipping_ = false;
    bytes.remove_prefix(nl + 1);
  }
}

void StreamAnswerReader::Line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, 5) != "data:") return;
  line.remove_prefix(5);
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line == "[DONE]") return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) Event(j);
}

void StreamAnswerReader::Event(const nlohmann::json& j) {
  ReadTokenIds(j, &reading_);
  int64_t cached = 0, prompt = 0;
  reading_.output = std::max(reading_.output, OutputTokensOf(j));
  if (UsageOf(j, &cached, &prompt)) {
    reading_.usage = true;
    reading_.cached = std::max(reading_.cached, cached);
    reading_.prompt = std::max(reading_.prompt, prompt);
  }
  const std::string type =
      j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (type == "response.completed" && j.contains("response")) {
    reading_.answer = AnswerOf("/v1/responses", j["response"]);
    return;
  }
  if (type == "content_block_delta" && j.contains("delta") && j["delta"].is_object()) {
    const nlohmann::json& d = j["delta"];
    if (d.contains("text") && d["text"].is_string()) text_ += d["text"].get<std::string>();
    return;
  }
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
  const nlohmann::json& c = j["choices"][0];
  if (c.contains("text") && c["text"].is_string()) text_ += c["text"].get<std::string>();
  if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content") &&
      c["delta"]["content"].is_string())
    text_ += c["delta"]["content"].get<std::string>();
}

AnswerReading StreamAnswerReader::Reading() const {
  AnswerReading r = reading_;
  if (r.answer.is_null()) r.answer = text_;
  return r;
}

}  // namespace internal
}  // namespace switchyard::upstream
