// Parsing the requests of the OpenAI front (see openai_request.h): the body, the fields
// both endpoints share, /v1/completions' own fields, and the entry points. The chat-only
// fields are openai_chat_request.cc's.
#include "frontends/openai/openai_request.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <limits>

#include "frontends/openai/openai_chat_request.h"
#include "frontends/openai/openai_json.h"

namespace switchyard::frontends::openai {
namespace {

using detail::Bad;
using detail::Get;
using detail::Indexed;
using detail::Json;
using detail::ParseBody;
using detail::Path;
using detail::ReadBool;
using detail::ReadInt;
using detail::ReadNumber;
using detail::ReadObject;
using detail::ReadString;
using detail::RequireString;
using detail::WrongType;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxPriority = 1000000;

// ---------------------------------------------------------------------------------------------
// The body.

// The top-level members each endpoint reads; any other one is listed in Request::ignored.
bool IsKnownField(const std::string& key, bool chat) {
  static constexpr std::string_view kCommon =
      " model max_tokens max_completion_tokens temperature top_p seed stream stream_options stop"
      " user metadata nvext n frequency_penalty presence_penalty logit_bias logprobs service_tier"
      " store structured_outputs guided_choice priority kv_transfer_params ";
  static constexpr std::string_view kChat =
      " messages tools tool_choice parallel_tool_calls response_format audio modalities"
      " top_logprobs functions function_call ";
  static constexpr std::string_view kCompletion = " prompt echo suffix best_of ";
  if (key.find(' ') != std::string::npos) return false;
  const std::string word = " " + key + " ";
  return kCommon.find(word) != std::string_view::npos ||
         (chat ? kChat : kCompletion).find(word) != std::string_view::npos;
}

std::vector<std::string> UnknownFields(const Json& j, bool chat) {
  std::vector<std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!IsKnownField(key, chat)) out.push_back(key);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fields common to both endpoints.

Status ParseModel(const Json& j, Request* r) {
  const Json* v = Get(j, "model");
  if (v == nullptr) return Bad("model", "required");
  SY_RETURN_IF_ERROR(ReadString(j, "", "model", &r->model));
  if (r->model.empty()) return Bad("model", "must not be empty");
  return Status::OK();
}

Status ParseMaxTokens(const Json& j, Request* r) {
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {  // the latter wins
    std::optional<int64_t> v;
    SY_RETURN_IF_ERROR(ReadInt(j, "", key, &v));
    if (!v) continue;
    if (*v < 1) return Bad(key, "must be at least 1");
    r->max_tokens = *v;
  }
  return Status::OK();
}

Status ParseSeed(const Json& j, Request* r) {
  const Json* v = Get(j, "seed");
  if (v == nullptr) return Status::OK();
  if (!v->is_number_integer()) return WrongType("seed", *v, "an integer");
  r->seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
  return Status::OK();
}

// logit_bias: {"<token id>": bias in [-100, 100]} (ids are checked against the model's
// vocabulary later, when the model is known).
Status ParseLogitBias(const Json& j, Request* r) {
  const Json* bias = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "logit_bias", &bias));
  if (bias == nullptr) return Status::OK();
  if (bias->size() > 1024) return Bad("logit_bias", "holds more than 1024 tokens");
  for (const auto& [key, value] : bias->items()) {
    const std::string field = "logit_bias." + key;
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id > INT32_MAX)
      return Bad(field, "the key must be a token id (a non-negative integer)");
    if (!value.is_number() || !(value.get<double>() >= -100 && value.get<double>() <= 100))
      return Bad(field, "must be a number in [-100, 100]");
    r->logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
  return Status::OK();
}

// structured_outputs: {"choice": [texts]} (vLLM's guided choice), or the older top-level
// guided_choice: the answer is exactly one of the texts.
Status ParseChoices(const Json& j, Request* r) {
  const Json* so = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "structured_outputs", &so));
  const Json* list = so ? Get(*so, "choice") : Get(j, "guided_choice");
  const std::string field = so ? "structured_outputs.choice" : "guided_choice";
  if (so)
    for (const auto& [key, value] : so->items())
      if (key != "choice") return Bad("structured_outputs." + key, "not supported (only choice)");
  if (list == nullptr) return Status::OK();
  if (!list->is_array() || list->empty() || list->size() > 256)
    return Bad(field, "must be an array of 1 to 256 non-empty strings");
  for (const Json& c : *list) {
    if (!c.is_string() || c.get_ref<const std::string&>().empty())
      return Bad(field, "must be an array of 1 to 256 non-empty strings");
    r->choices.push_back(c.get<std::string>());
  }
  return Status::OK();
}

// priority: vLLM's and SGLang's request priority, an integer (lower is more important).
Status ParsePriority(const Json& j, Request* r) {
  std::optional<int64_t> v;
  SY_RETURN_IF_ERROR(ReadInt(j, "", "priority", &v));
  if (!v) return Status::OK();
  if (*v < -kMaxPriority || *v > kMaxPriority)
    return Bad("priority", "must be an integer in [-1000000, 1000000]");
  r->priority = *v;
  return Status::OK();
}

// kv_transfer_params: vLLM's per-request controls of its CPU offloading. max_load_tokens and
// max_offload_tokens are integers >= 0; kv_load_tiers an array of {"medium": string} (loads
// from the host tier only when one names "CPU"). Other members (a connector's own, such as
// disaggregated prefill's) are accepted and ignored, as vLLM hands them to its connector.
Status ParseKvTransfer(const Json& j, Request* r) {
  constexpr std::string_view kField = "kv_transfer_params";
  const Json* p = Get(j, "kv_transfer_params");
  if (p == nullptr) return Status::OK();
  if (!p->is_object()) return WrongType(kField, *p, "an object");
  auto limit = [&](const char* key, int64_t* out) {
    std::optional<int64_t> v;
    SY_RETURN_IF_ERROR(ReadInt(*p, kField, key, &v));
    if (v && *v < 0) return Bad(Path(kField, key), "must be an integer >= 0");
    if (v) *out = *v;
    return Status::OK();
  };
  SY_RETURN_IF_ERROR(limit("max_load_tokens", &r->kv_transfer.max_load_tokens));
  SY_RETURN_IF_ERROR(limit("max_offload_tokens", &r->kv_transfer.max_offload_tokens));
  const Json* tiers = Get(*p, "kv_load_tiers");
  if (tiers == nullptr) return Status::OK();
  const std::string at = Path(kField, "kv_load_tiers");
  if (!tiers->is_array()) return WrongType(at, *tiers, "an array");
  r->kv_transfer.load_from_host = false;
  for (size_t i = 0; i < tiers->size(); ++i) {
    std::string medium;
    if (!(*tiers)[i].is_object()) return WrongType(Indexed(at, i), (*tiers)[i], "an object");
    SY_RETURN_IF_ERROR(RequireString((*tiers)[i], Indexed(at, i), "medium", &medium));
    if (medium == "CPU" || medium == "cpu") r->kv_transfer.load_from_host = true;
  }
  return Status::OK();
}

Status ParseSampling(const Json& j, Request* r) {
  std::optional<double> temperature, top_p;
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "temperature", &temperature));
  if (temperature) {
    if (!(*temperature >= 0 && *temperature <= 2)) return Bad("temperature", "must be in [0, 2]");
    r->temperature = *temperature;
  }
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "top_p", &top_p));
  if (top_p) {
    if (!(*top_p > 0 && *top_p <= 1)) return Bad("top_p", "must be in (0, 1]");
    r->top_p = *top_p;
  }
  SY_RETURN_IF_ERROR(ParseLogitBias(j, r));
  SY_RETURN_IF_ERROR(ParseChoices(j, r));
  SY_RETURN_IF_ERROR(ParsePriority(j, r));
  SY_RETURN_IF_ERROR(ParseKvTransfer(j, r));
  return ParseSeed(j, r);
}

Status ParseStreaming(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ReadBool(j, "", "stream", &r->stream));
  const Json* options = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "stream_options", &options));
  if (options == nullptr) return Status::OK();
  return ReadBool(*options, "stream_options", "include_usage", &r->include_usage);
}

Status ParseStop(const Json& j, Request* r) {
  const Json* v = Get(j, "stop");
  if (v == nullptr) return Status::OK();
  if (v->is_string()) {
    if (v->get_ref<const std::string&>().empty()) return Bad("stop", "must not be empty");
    r->stop.push_back(v->get<std::string>());
    return Status::OK();
  }
  if (!v->is_array()) return WrongType("stop", *v, "a string or an array of strings");
  if (v->size() > 4) return Bad("stop", "at most 4 sequences are supported");
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& s = (*v)[i];
    if (!s.is_string()) return WrongType(Indexed("stop", i), s, "a string");
    if (s.get_ref<const std::string&>().empty())
      return Bad(Indexed("stop", i), "must not be empty");
    r->stop.push_back(s.get<std::string>());
  }
  return Status::OK();
}

Status ParseIdentity(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ReadString(j, "", "user", &r->user));
  const Json* metadata = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "metadata", &metadata));
  if (metadata == nullptr) return Status::OK();
  return ReadString(*metadata, "metadata", "session_id", &r->metadata_session_id);
}

Status ParseNvext(const Json& j, Request* r) {
  const Json* nvext = nullptr;
  const Json* hints = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "nvext", &nvext));
  if (nvext == nullptr) return Status::OK();
  SY_RETURN_IF_ERROR(ReadObject(*nvext, "nvext", "agent_hints", &hints));
  if (hints == nullptr) return Status::OK();
  constexpr char kPrefix[] = "nvext.agent_hints";
  SY_RETURN_IF_ERROR(
      ReadNumber(*hints, kPrefix, "latency_sensitivity", &r->hints.latency_sensitivity));
  SY_RETURN_IF_ERROR(ReadInt(*hints, kPrefix, "osl", &r->hints.osl));
  if (r->hints.osl && *r->hints.osl < 0) return Bad("nvext.agent_hints.osl", "must be >= 0");
  return ReadInt(*hints, kPrefix, "priority", &r->hints.priority);
}

// An integer parameter that only `allowed` may take ("n", "best_of").
Status OnlyInt(const Json& j, const char* key, int64_t allowed) {
  std::optional<int64_t> v;
  SY_RETURN_IF_ERROR(ReadInt(j, "", key, &v));
  if (v && *v != allowed) return Bad(key, "only " + std::to_string(allowed) + " is supported");
  return Status::OK();
}

// A number parameter accepted only at its neutral value 0 (the penalties).
Status OnlyZero(const Json& j, const char* key) {
  std::optional<double> v;
  SY_RETURN_IF_ERROR(ReadNumber(j, "", key, &v));
  if (v && *v != 0) return Bad(key, "only 0 is supported");
  return Status::OK();
}

Status ParseIgnoredCommon(const Json& j) {
  SY_RETURN_IF_ERROR(OnlyInt(j, "n", 1));
  SY_RETURN_IF_ERROR(OnlyZero(j, "frequency_penalty"));
  SY_RETURN_IF_ERROR(OnlyZero(j, "presence_penalty"));
  std::string tier;
  bool store = false;
  SY_RETURN_IF_ERROR(ReadString(j, "", "service_tier", &tier));
  return ReadBool(j, "", "store", &store);
}

Status ParseCommon(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ParseModel(j, r));
  SY_RETURN_IF_ERROR(ParseMaxTokens(j, r));
  SY_RETURN_IF_ERROR(ParseSampling(j, r));
  SY_RETURN_IF_ERROR(ParseStreaming(j, r));
  SY_RETURN_IF_ERROR(ParseStop(j, r));
  SY_RETURN_IF_ERROR(ParseIdentity(j, r));
  SY_RETURN_IF_ERROR(ParseNvext(j, r));
  return ParseIgnoredCommon(j);
}

// ---------------------------------------------------------------------------------------------
// Completions.

Status ParsePrompt(const Json& j, Request* r) {
  const Json* v = Get(j, "prompt");
  if (v == nullptr) return Bad("prompt", "required");
  if (v->is_string()) {
    r->prompt = v->get<std::string>();
    return Status::OK();
  }
  if (!v->is_array()) return WrongType("prompt", *v, "a string");
  if (v->empty()) return Bad("prompt", "must not be empty");
  const Json& first = (*v)[0];
  if (first.is_number_integer() || first.is_array()) {
    return Bad("prompt", "token-id prompts are not supported; send text");
  }
  if (!first.is_string()) return WrongType("prompt[0]", first, "a string");
  if (v->size() > 1) return Bad("prompt", "only one prompt per request is supported");
  r->prompt = first.get<std::string>();
  return Status::OK();
}

Status ParseCompletionLogprobs(const Json& j) {
  const Json* v = Get(j, "logprobs");
  if (v == nullptr || (v->is_boolean() && !v->get<bool>())) return Status::OK();
  if (!v->is_number_integer() && !v->is_boolean()) return WrongType("logprobs", *v, "an integer");
  return Bad("logprobs", "log probabilities are not supported");
}

Status ParseCompletionFields(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ParsePrompt(j, r));
  bool echo = false;
  SY_RETURN_IF_ERROR(ReadBool(j, "", "echo", &echo));
  if (echo) return Bad("echo", "not supported");
  std::string suffix;
  SY_RETURN_IF_ERROR(ReadString(j, "", "suffix", &suffix));
  if (!suffix.empty()) return Bad("suffix", "not supported");
  SY_RETURN_IF_ERROR(OnlyInt(j, "best_of", 1));
  return ParseCompletionLogprobs(j);
}

Result<Request> Parse(std::string_view body, bool chat) {
  SY_ASSIGN_OR_RETURN(Json j, ParseBody(body));
  Request r;
  r.chat = chat;
  r.ignored = UnknownFields(j, chat);
  SY_RETURN_IF_ERROR(ParseCommon(j, &r));
  SY_RETURN_IF_ERROR(chat ? detail::ParseChatFields(j, &r) : ParseCompletionFields(j, &r));
  return r;
}

}  // namespace

Result<Request> ParseChat(std::string_view body) { return Parse(body, /*chat=*/true); }

Result<Request> ParseCompletion(std::string_view body) { return Parse(body, /*chat=*/false); }

std::string ParamOf(const Status& s) {
  if (!s.IsInvalidArgument()) return "";
  const std::string& msg = s.message();
  size_t colon = msg.find(": ");
  if (colon == 0 || colon == std::string::npos) return "";
  std::string param = msg.substr(0, colon);
  bool plain = std::all_of(param.begin(), param.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_.[]-").find(c) != std::string_view::npos;
  });
  return plain ? param : "";
}

}  // namespace switchyard::frontends::openai
