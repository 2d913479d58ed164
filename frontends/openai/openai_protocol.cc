// The OpenAI protocol layer (see openai_protocol.h): request parsing, the Switchyard headers,
// the plain chat template and response formatting.
#include "frontends/openai/openai_protocol.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace switchyard::frontends::openai {
namespace {

// ordered_json keeps the client's key order (tool schemas render as written) and writes our
// responses in OpenAI's field order.
using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxQuoted = 64;
constexpr char kDeadlineHeader[] = "x-switchyard-deadline";
constexpr char kPriorityHeader[] = "x-switchyard-priority";

// ---------------------------------------------------------------------------------------------
// Errors and small helpers.

Status Bad(std::string_view param, std::string_view what) {
  std::string msg(param);
  msg += ": ";
  msg += what;
  return Status::InvalidArgument(std::move(msg));
}

// 'value' for an error message, cut to kMaxQuoted bytes on a character boundary.
std::string Quoted(std::string_view s) {
  if (s.size() <= kMaxQuoted) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, Utf8SafePrefix(s.substr(0, kMaxQuoted)))) + "...'";
}

Status WrongType(std::string_view param, const Json& v, std::string_view expected) {
  return Bad(param, "must be " + std::string(expected) + ", got " + v.type_name());
}

std::string Path(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
}

std::string Indexed(std::string_view prefix, size_t i) {
  return std::string(prefix) + "[" + std::to_string(i) + "]";
}

// The member `key` of `obj`, or null when absent or JSON null.
const Json* Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// ---------------------------------------------------------------------------------------------
// Typed readers: absent or null leaves *out unchanged; a wrong type names prefix.key.

Status ReadString(const Json& obj, std::string_view prefix, const char* key, std::string* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_string()) return WrongType(Path(prefix, key), *v, "a string");
  *out = v->get<std::string>();
  return Status::OK();
}

Status ReadBool(const Json& obj, std::string_view prefix, const char* key, bool* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_boolean()) return WrongType(Path(prefix, key), *v, "a boolean");
  *out = v->get<bool>();
  return Status::OK();
}

Status ReadInt(const Json& obj, std::string_view prefix, const char* key,
               std::optional<int64_t>* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_number_integer()) return WrongType(Path(prefix, key), *v, "an integer");
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Bad(Path(prefix, key), "too large");
  }
  *out = v->get<int64_t>();
  return Status::OK();
}

Status ReadNumber(const Json& obj, std::string_view prefix, const char* key,
                  std::optional<double>* out) {
  const Json* v = Get(obj, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_number()) return WrongType(Path(prefix, key), *v, "a number");
  *out = v->get<double>();
  return Status::OK();
}

Status ReadObject(const Json& obj, std::string_view prefix, const char* key, const Json** out) {
  *out = Get(obj, key);
  if (*out != nullptr && !(*out)->is_object()) {
    return WrongType(Path(prefix, key), **out, "an object");
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// The body.

// The deepest nesting of [ and { outside strings; stops counting past kMaxDepth.
int NestingDepth(std::string_view body) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxDepth) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Records where nlohmann's parser gave up (a second, failing pass; no exception is thrown).
class ErrorSax : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: <what>; last read: ..."
    std::string what = ex.what();
    size_t start = what.find(": ", what.find("column"));
    size_t end = what.find("; last read");
    reason = start == std::string::npos ? "" : what.substr(start + 2, end - start - 2);
    position = at;
    return false;
  }
  size_t position = 0;
  std::string reason;
};

Status JsonSyntaxError(std::string_view body) {
  ErrorSax sax;
  Json::sax_parse(body.data(), body.data() + body.size(), &sax);
  std::string msg = "request body is not valid JSON (at byte " + std::to_string(sax.position);
  if (!sax.reason.empty()) msg += ": " + sax.reason;
  return Status::InvalidArgument(msg + ")");
}

Result<Json> ParseBody(std::string_view body) {
  if (NestingDepth(body) > kMaxDepth) {
    return Status::InvalidArgument("request body nests deeper than " + std::to_string(kMaxDepth) +
                                   " levels");
  }
  Json j = Json::parse(body.data(), body.data() + body.size(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) return JsonSyntaxError(body);
  if (!j.is_object()) return Status::InvalidArgument("request body must be a JSON object");
  return j;
}

// The top-level members each endpoint reads; any other one is listed in Request::ignored.
bool IsKnownField(const std::string& key, bool chat) {
  static constexpr std::string_view kCommon =
      " model max_tokens max_completion_tokens temperature top_p seed stream stream_options stop"
      " user metadata nvext n frequency_penalty presence_penalty logit_bias logprobs service_tier"
      " store ";
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
  const Json* bias = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "logit_bias", &bias));
  if (bias != nullptr && !bias->empty()) return Bad("logit_bias", "not supported (only {})");
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
// Chat messages.

Status ParseContentPart(const Json& part, const std::string& p, std::string* out) {
  if (!part.is_object()) return WrongType(p, part, "an object");
  std::string type, text;
  SY_RETURN_IF_ERROR(ReadString(part, p, "type", &type));
  if (type != "text") {
    return Bad(p + ".type", "unsupported content part type " + Quoted(type) + " (only \"text\")");
  }
  if (Get(part, "text") == nullptr) return Bad(p + ".text", "required");
  SY_RETURN_IF_ERROR(ReadString(part, p, "text", &text));
  if (!out->empty()) *out += '\n';
  *out += text;
  return Status::OK();
}

Status ParseContent(const Json& m, const std::string& p, Message* msg) {
  const Json* v = Get(m, "content");
  if (v == nullptr) {
    if (msg->role == "assistant") return Status::OK();  // e.g. only tool_calls
    return Bad(p + ".content", "required for role " + Quoted(msg->role));
  }
  if (v->is_string()) {
    msg->content = v->get<std::string>();
    return Status::OK();
  }
  if (!v->is_array()) return WrongType(p + ".content", *v, "a string or an array of parts");
  for (size_t i = 0; i < v->size(); ++i) {
    SY_RETURN_IF_ERROR(ParseContentPart((*v)[i], Indexed(p + ".content", i), &msg->content));
  }
  return Status::OK();
}

Status ParseToolCall(const Json& c, const std::string& p, ToolCall* call) {
  if (!c.is_object()) return WrongType(p, c, "an object");
  if (Get(c, "id") == nullptr) return Bad(p + ".id", "required");
  SY_RETURN_IF_ERROR(ReadString(c, p, "id", &call->id));
  std::string type = "function";
  SY_RETURN_IF_ERROR(ReadString(c, p, "type", &type));
  if (type != "function") return Bad(p + ".type", "only \"function\" is supported");
  const Json* fn = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(c, p, "function", &fn));
  if (fn == nullptr) return Bad(p + ".function", "required");
  const std::string fp = p + ".function";
  if (Get(*fn, "name") == nullptr) return Bad(fp + ".name", "required");
  SY_RETURN_IF_ERROR(ReadString(*fn, fp, "name", &call->name));
  const Json* args = Get(*fn, "arguments");
  if (args == nullptr) return Bad(fp + ".arguments", "required");
  if (args->is_object()) {  // not the spec, but some clients echo the object back
    call->arguments = Dump(*args);
    return Status::OK();
  }
  return ReadString(*fn, fp, "arguments", &call->arguments);
}

Status ParseToolCalls(const Json& m, const std::string& p, Message* msg) {
  const Json* v = Get(m, "tool_calls");
  if (v == nullptr) return Status::OK();
  if (msg->role != "assistant") return Bad(p + ".tool_calls", "only assistant messages have them");
  if (!v->is_array()) return WrongType(p + ".tool_calls", *v, "an array");
  for (size_t i = 0; i < v->size(); ++i) {
    ToolCall call;
    SY_RETURN_IF_ERROR(ParseToolCall((*v)[i], Indexed(p + ".tool_calls", i), &call));
    msg->tool_calls.push_back(std::move(call));
  }
  return Status::OK();
}

Status ParseRole(const Json& m, const std::string& p, Message* msg) {
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  if (Get(m, "role") == nullptr) return Bad(p + ".role", "required");
  SY_RETURN_IF_ERROR(ReadString(m, p, "role", &msg->role));
  if (!kRoles.count(msg->role)) {
    return Bad(p + ".role", "unknown role " + Quoted(msg->role) +
                                " (expected system, developer, user, assistant or tool)");
  }
  return Status::OK();
}

Result<Message> ParseMessage(const Json& m, const std::string& p) {
  if (!m.is_object()) return WrongType(p, m, "an object");
  Message msg;
  SY_RETURN_IF_ERROR(ParseRole(m, p, &msg));
  SY_RETURN_IF_ERROR(ParseContent(m, p, &msg));
  SY_RETURN_IF_ERROR(ReadString(m, p, "name", &msg.name));
  SY_RETURN_IF_ERROR(ReadString(m, p, "tool_call_id", &msg.tool_call_id));
  if (msg.role == "tool" && msg.tool_call_id.empty()) {
    return Bad(p + ".tool_call_id", "required for role 'tool'");
  }
  SY_RETURN_IF_ERROR(ParseToolCalls(m, p, &msg));
  return msg;
}

Status ParseMessages(const Json& j, Request* r) {
  const Json* v = Get(j, "messages");
  if (v == nullptr) return Bad("messages", "required");
  if (!v->is_array()) return WrongType("messages", *v, "an array");
  if (v->empty()) return Bad("messages", "must not be empty");
  for (size_t i = 0; i < v->size(); ++i) {
    SY_ASSIGN_OR_RETURN(Message m, ParseMessage((*v)[i], Indexed("messages", i)));
    r->messages.push_back(std::move(m));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Tools.

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Result<ToolDef> ParseTool(const Json& t, const std::string& p) {
  if (!t.is_object()) return WrongType(p, t, "an object");
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(t, p, "type", &type));
  if (type != "function") return Bad(p + ".type", "only \"function\" is supported");
  const Json* fn = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(t, p, "function", &fn));
  if (fn == nullptr) return Bad(p + ".function", "required");
  const std::string fp = p + ".function";
  ToolDef def;
  SY_RETURN_IF_ERROR(ReadString(*fn, fp, "name", &def.name));
  if (!ValidToolName(def.name)) {
    return Bad(fp + ".name", "must be 1-64 characters of a-z, A-Z, 0-9, _ and -");
  }
  SY_RETURN_IF_ERROR(ReadString(*fn, fp, "description", &def.description));
  const Json* params = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(*fn, fp, "parameters", &params));
  if (params != nullptr) def.parameters_json = Dump(*params);
  bool strict = false;
  SY_RETURN_IF_ERROR(ReadBool(*fn, fp, "strict", &strict));
  return def;
}

Status ParseTools(const Json& j, Request* r) {
  const Json* v = Get(j, "tools");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType("tools", *v, "an array");
  std::set<std::string> names;
  for (size_t i = 0; i < v->size(); ++i) {
    SY_ASSIGN_OR_RETURN(ToolDef def, ParseTool((*v)[i], Indexed("tools", i)));
    if (!names.insert(def.name).second) {
      return Bad(Indexed("tools", i) + ".function.name", "duplicate tool name " + Quoted(def.name));
    }
    r->tools.push_back(std::move(def));
  }
  return Status::OK();
}

Status ParseNamedToolChoice(const Json& v, Request* r) {
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(v, "tool_choice", "type", &type));
  if (type != "function") return Bad("tool_choice.type", "only \"function\" is supported");
  const Json* fn = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(v, "tool_choice", "function", &fn));
  if (fn == nullptr) return Bad("tool_choice.function", "required");
  std::string name;
  SY_RETURN_IF_ERROR(ReadString(*fn, "tool_choice.function", "name", &name));
  bool known = std::any_of(r->tools.begin(), r->tools.end(),
                           [&](const ToolDef& t) { return t.name == name; });
  if (!known)
    return Bad("tool_choice.function.name", "no tool named " + Quoted(name) + " in tools");
  r->tool_choice = {ToolChoice::Kind::kFunction, name};
  return Status::OK();
}

Status ParseToolChoice(const Json& j, Request* r) {
  const Json* v = Get(j, "tool_choice");
  if (v == nullptr) return Status::OK();
  if (v->is_object()) return ParseNamedToolChoice(*v, r);
  if (!v->is_string()) return WrongType("tool_choice", *v, "a string or an object");
  const std::string& s = v->get_ref<const std::string&>();
  if (s == "auto") {
    r->tool_choice.kind = ToolChoice::Kind::kAuto;
  } else if (s == "none") {
    r->tool_choice.kind = ToolChoice::Kind::kNone;
  } else if (s == "required") {
    if (r->tools.empty()) return Bad("tool_choice", "\"required\" needs tools");
    r->tool_choice.kind = ToolChoice::Kind::kRequired;
  } else {
    return Bad("tool_choice",
               "expected \"auto\", \"none\", \"required\" or a function, got " + Quoted(s));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Chat-only parameters that are accepted at their neutral values and refused otherwise.

Status ParseResponseFormat(const Json& j) {
  const Json* v = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "response_format", &v));
  if (v == nullptr) return Status::OK();
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(*v, "response_format", "type", &type));
  if (type != "text") {
    return Bad("response_format", "only {\"type\":\"text\"} is supported, got " + Quoted(type));
  }
  return Status::OK();
}

Status ParseModalities(const Json& j) {
  if (Get(j, "audio") != nullptr) return Bad("audio", "audio output is not supported");
  const Json* v = Get(j, "modalities");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType("modalities", *v, "an array");
  for (const Json& m : *v) {
    if (!m.is_string() || m.get_ref<const std::string&>() != "text") {
      return Bad("modalities", "only [\"text\"] is supported");
    }
  }
  return Status::OK();
}

Status ParseChatLogprobs(const Json& j) {
  bool logprobs = false;
  std::optional<int64_t> top;
  SY_RETURN_IF_ERROR(ReadBool(j, "", "logprobs", &logprobs));
  if (logprobs) return Bad("logprobs", "log probabilities are not supported");
  SY_RETURN_IF_ERROR(ReadInt(j, "", "top_logprobs", &top));
  if (top && *top != 0) return Bad("top_logprobs", "log probabilities are not supported");
  return Status::OK();
}

Status ParseChatIgnored(const Json& j) {
  bool parallel = true;
  SY_RETURN_IF_ERROR(ReadBool(j, "", "parallel_tool_calls", &parallel));
  SY_RETURN_IF_ERROR(ParseResponseFormat(j));
  SY_RETURN_IF_ERROR(ParseModalities(j));
  SY_RETURN_IF_ERROR(ParseChatLogprobs(j));
  for (const char* key : {"functions", "function_call"}) {
    if (Get(j, key) != nullptr) return Bad(key, "deprecated and not supported; use tools");
  }
  return Status::OK();
}

Status ParseChatFields(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ParseMessages(j, r));
  SY_RETURN_IF_ERROR(ParseTools(j, r));
  SY_RETURN_IF_ERROR(ParseToolChoice(j, r));
  return ParseChatIgnored(j);
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
  SY_RETURN_IF_ERROR(chat ? ParseChatFields(j, &r) : ParseCompletionFields(j, &r));
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

// ---------------------------------------------------------------------------------------------
// Errors.

namespace {
Json NullIfEmpty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
}  // namespace

std::string ErrorJson(const Error& e) {
  Json err = {{"message", e.message},
              {"type", e.type},
              {"param", NullIfEmpty(e.param)},
              {"code", NullIfEmpty(e.code)}};
  return Dump(Json{{"error", std::move(err)}});
}

Error ErrorFromStatus(const Status& s) {
  Error e;
  e.message = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      e.param = ParamOf(s);
      return e;
    case StatusCode::kNotSupported:
      e.code = "unsupported";
      return e;
    case StatusCode::kUnauthenticated:
      return {401, e.message, "authentication_error", "", "invalid_api_key"};
    case StatusCode::kPermissionDenied:
      return {403, e.message, "permission_error", "", ""};
    case StatusCode::kNotFound:
      return {404, e.message, "invalid_request_error", "", "not_found"};
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
      return {409, e.message, "invalid_request_error", "", "conflict"};
    case StatusCode::kResourceExhausted:
      return {429, e.message, "rate_limit_error", "", "rate_limit_exceeded"};
    case StatusCode::kUnavailable:
      return {503, e.message, "server_error", "", "unavailable"};
    case StatusCode::kDeadlineExceeded:
      return {504, e.message, "server_error", "", "deadline_exceeded"};
    default:
      return {500, e.message, "server_error", "", ""};
  }
}

// ---------------------------------------------------------------------------------------------
// Headers.

namespace {
constexpr const char* kSessionHeaders[] = {"x-session-id", "x-claude-code-session-id", "session_id",
                                           "session-id"};
}  // namespace

std::string SessionIdOf(const std::map<std::string, std::string>& headers, const Request& r) {
  for (const char* h : kSessionHeaders) {
    auto it = headers.find(h);
    if (it != headers.end() && !it->second.empty()) return it->second;
  }
  return !r.metadata_session_id.empty() ? r.metadata_session_id : r.user;
}

bool SessionIdIsUser(const std::map<std::string, std::string>& headers, const Request& r) {
  for (const char* h : kSessionHeaders) {
    auto it = headers.find(h);
    if (it != headers.end() && !it->second.empty()) return false;
  }
  return r.metadata_session_id.empty() && !r.user.empty();
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t Digits(std::string_view s) {  // AllDigits(s), at most 18 digits
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// "12" or "12.345": milliseconds, rounded; nullopt if not a plain decimal of at most 1e9 s.
std::optional<int64_t> DecimalSecondsMs(std::string_view s) {
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (!AllDigits(whole) || (dot != std::string_view::npos && !AllDigits(frac))) return {};
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  if (whole.size() > 10 || Digits(whole) > 1000000000) return {};
  std::string ms(frac.substr(0, 4));
  ms.resize(4, '0');
  int64_t frac_ms = (Digits(ms) + 5) / 10;  // round half up on the fourth digit
  return Digits(whole) * 1000 + frac_ms;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int64_t m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// A fixed-width field of digits at s[pos, pos + n), or -1.
int64_t Field(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size() || !AllDigits(s.substr(pos, n))) return -1;
  return Digits(s.substr(pos, n));
}

// The offset suffix "Z" or "+hh:mm" / "-hh:mm" in minutes east of UTC, or nullopt.
std::optional<int64_t> OffsetMinutes(std::string_view s) {
  if (s == "Z" || s == "z") return 0;
  if (s.size() != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':') return {};
  int64_t h = Field(s, 1, 2), m = Field(s, 4, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59) return {};
  return (s[0] == '-' ? -1 : 1) * (h * 60 + m);
}

// RFC 3339 date-time ("2025-06-01T12:00:00.5Z") in ms since the epoch, or nullopt.
std::optional<int64_t> Rfc3339Ms(std::string_view s) {
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':') return {};
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return {};
  int64_t y = Field(s, 0, 4), mo = Field(s, 5, 2), d = Field(s, 8, 2);
  int64_t h = Field(s, 11, 2), mi = Field(s, 14, 2), sec = Field(s, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return {};
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) return {};
  size_t pos = 19;
  int64_t frac_ms = 0;
  if (s[pos] == '.') {
    size_t end = pos + 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == pos + 1) return {};
    std::string ms(s.substr(pos + 1, std::min<size_t>(3, end - pos - 1)));
    ms.resize(3, '0');
    frac_ms = Digits(ms);
    pos = end;
  }
  std::optional<int64_t> offset = OffsetMinutes(s.substr(pos));
  if (!offset) return {};
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - *offset * 60;
  return secs * 1000 + frac_ms;
}

}  // namespace

Result<int64_t> ParseDeadline(std::string_view value, int64_t now_ms) {
  std::string_view v = Trim(value);
  if (std::optional<int64_t> ms = DecimalSecondsMs(v)) {
    int64_t out = 0;
    if (__builtin_add_overflow(now_ms, *ms, &out)) return Bad(kDeadlineHeader, "too far ahead");
    return out;
  }
  if (std::optional<int64_t> at = Rfc3339Ms(v)) return *at;
  return Bad(kDeadlineHeader,
             "expected seconds from now (\"30\", \"2.5\", at most 1e9) or an RFC 3339 time, got " +
                 Quoted(v));
}

Result<int> ParsePriority(std::string_view value) {
  std::string v(Trim(value));
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "interactive" || v == "0") return 1;
  if (v == "standard" || v == "1") return 2;
  if (v == "batch" || v == "2") return 3;
  return Bad(kPriorityHeader,
             "expected interactive, standard, batch or 0..2, got " + Quoted(Trim(value)));
}

// ---------------------------------------------------------------------------------------------
// The plain chat template.

namespace {

std::string Header(std::string_view role, std::string_view extra) {
  std::string h = "<|" + std::string(role) + "|>";
  if (!extra.empty()) h += " " + std::string(extra);
  return h + "\n";
}

std::string ToolsBlock(const std::vector<ToolDef>& tools) {
  std::string out =
      "# Tools\nTo call a tool, write <|tool_call|> <id> <name> and its JSON arguments on the "
      "next line.";
  for (const ToolDef& t : tools) {
    out += "\n- " + t.name;
    if (!t.description.empty()) out += ": " + t.description;
    if (!t.parameters_json.empty()) out += "\n  parameters: " + t.parameters_json;
  }
  return out;
}

bool IsSystem(const Message& m) { return m.role == "system" || m.role == "developer"; }

std::string RenderTurn(const Message& m) {
  if (m.role == "assistant")
    return Header("assistant", "") + RenderAssistantTurn(m.content, m.tool_calls);
  if (m.role == "tool") return Header("tool", m.tool_call_id) + m.content + "\n";
  return Header(IsSystem(m) ? "system" : m.role, m.name) + m.content + "\n";
}

}  // namespace

std::string RenderAssistantTurn(const std::string& content, const std::vector<ToolCall>& calls) {
  std::string body = content;
  for (const ToolCall& c : calls) {
    if (!body.empty()) body += '\n';
    body += "<|tool_call|> " + c.id + " " + c.name + "\n" + c.arguments;
  }
  return body + "\n";
}

std::string RenderChat(const std::vector<Message>& messages, const std::vector<ToolDef>& tools) {
  std::string out;
  size_t first = 0;
  if (!tools.empty()) {
    if (!messages.empty() && IsSystem(messages[0])) {
      const Message& m = messages[0];
      std::string body = m.content.empty() ? "" : m.content + "\n\n";
      out = Header("system", m.name) + body + ToolsBlock(tools) + "\n";
      first = 1;
    } else {
      out = Header("system", "") + ToolsBlock(tools) + "\n";
    }
  }
  for (size_t i = first; i < messages.size(); ++i) out += RenderTurn(messages[i]);
  return out + Header("assistant", "");
}

size_t UnsettledTail(std::string_view text, const std::vector<std::string>& stops) {
  constexpr std::string_view kReplacement = "\xef\xbf\xbd";
  size_t hold = 0;
  while (text.size() >= hold + kReplacement.size() &&
         text.substr(text.size() - hold - kReplacement.size(), kReplacement.size()) == kReplacement)
    hold += kReplacement.size();
  for (const std::string& stop : stops) {
    for (size_t k = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); k > hold; --k)
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
  }
  return hold;
}

// ---------------------------------------------------------------------------------------------
// Tool arguments from generated text.

size_t Utf8SafePrefix(std::string_view text) {
  size_t i = text.size();
  size_t back = 0;
  while (i > 0 && back < 3 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++back;
  }
  if (i == 0) return text.size();
  unsigned char lead = static_cast<unsigned char>(text[i - 1]);
  size_t need = lead < 0x80           ? 1
                : (lead >> 5) == 0x6  ? 2
                : (lead >> 4) == 0xE  ? 3
                : (lead >> 3) == 0x1E ? 4
                                      : 1;
  return text.size() - (i - 1) < need ? i - 1 : text.size();
}

namespace {

// The schema type of a property ("string" when unstated; the first non-null of a list).
std::string TypeOf(const Json& prop) {
  const Json* t = prop.is_object() ? Get(prop, "type") : nullptr;
  if (t != nullptr && t->is_string()) return t->get<std::string>();
  if (t != nullptr && t->is_array()) {
    for (const Json& x : *t) {
      if (x.is_string() && x.get_ref<const std::string&>() != "null") return x.get<std::string>();
    }
  }
  return "string";
}

// A fixed value for a property that takes no text (an enum, a const, a non-string type).
std::optional<Json> FixedValue(const Json& prop) {
  if (prop.is_object()) {
    const Json* e = Get(prop, "enum");
    if (e != nullptr && e->is_array() && !e->empty()) return (*e)[0];
    if (const Json* c = Get(prop, "const")) return *c;
  }
  const std::string type = TypeOf(prop);
  if (type == "string") return std::nullopt;
  if (type == "integer" || type == "number") return Json(0);
  if (type == "boolean") return Json(false);
  if (type == "array") return Json::array();
  if (type == "object") return Json::object();
  return Json(nullptr);
}

// `text` cut into n consecutive slices of about equal length, on character boundaries.
std::vector<std::string> Slices(std::string_view text, size_t n) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t k = 1; k <= n; ++k) {
    size_t end = k == n ? text.size() : text.size() * k / n;
    while (end > start && end < text.size() &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      --end;
    }
    out.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// Fills the required properties: strings with slices of `text`, the others with FixedValue.
Json FillRequired(const Json& props, const std::vector<std::string>& required,
                  std::string_view text) {
  auto prop = [&](const std::string& name) {
    auto it = props.find(name);
    return it == props.end() ? Json::object() : *it;
  };
  size_t strings = 0;
  for (const std::string& name : required) strings += !FixedValue(prop(name)).has_value();
  std::vector<std::string> slices = Slices(text, std::max<size_t>(strings, 1));
  Json args = Json::object();
  size_t next = 0;
  for (const std::string& name : required) {
    std::optional<Json> fixed = FixedValue(prop(name));
    args[name] = fixed ? *fixed : Json(slices[next++]);
  }
  return args;
}

}  // namespace

std::string ArgumentsFromText(const ToolDef* tool, std::string_view generated) {
  Json schema = tool == nullptr ? Json() : Json::parse(tool->parameters_json, nullptr, false);
  const Json* props = schema.is_object() ? Get(schema, "properties") : nullptr;
  if (props != nullptr && !props->is_object()) props = nullptr;
  std::vector<std::string> required;
  const Json* req = schema.is_object() ? Get(schema, "required") : nullptr;
  if (req != nullptr && req->is_array()) {
    for (const Json& r : *req) {
      if (r.is_string()) required.push_back(r.get<std::string>());
    }
  }
  const Json no_props = Json::object();
  if (!required.empty()) return Dump(FillRequired(props ? *props : no_props, required, generated));
  if (props != nullptr) {
    for (const auto& [name, prop] : props->items()) {
      if (!FixedValue(prop)) return Dump(Json{{name, std::string(generated)}});
    }
  }
  return Dump(Json{{"input", std::string(generated)}});
}

// ---------------------------------------------------------------------------------------------
// Responses.

namespace {

Json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json ToolCallsJson(const std::vector<ToolCall>& calls, bool with_index) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = Json::object();
    if (with_index) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

Json Envelope(const Response& r, const char* object) {
  return {{"id", r.id},
          {"object", object},
          {"created", r.created},
          {"model", r.model},
          {"system_fingerprint", NullIfEmpty(r.system_fingerprint)}};
}

Json ChatMessageJson(const Choice& c) {
  Json m = {{"role", "assistant"},
            {"content", c.text.empty() && !c.tool_calls.empty() ? Json(nullptr) : Json(c.text)},
            {"refusal", nullptr}};
  if (!c.tool_calls.empty()) m["tool_calls"] = ToolCallsJson(c.tool_calls, /*with_index=*/false);
  return m;
}

std::string Event(const Json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace

std::string ResponseJson(const Response& r) {
  Json j = Envelope(r, r.chat ? "chat.completion" : "text_completion");
  Json choice = {{"index", 0}};
  if (r.chat) {
    choice["message"] = ChatMessageJson(r.choice);
  } else {
    choice["text"] = r.choice.text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = NullIfEmpty(r.choice.finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = UsageJson(r.usage);
  return Dump(j);
}

std::string ChunkEvent(const Response& head, const std::string& delta_text, bool first,
                       const std::string& finish_reason, const std::vector<ToolCall>* tool_calls) {
  Json j = Envelope(head, head.chat ? "chat.completion.chunk" : "text_completion");
  Json choice = {{"index", 0}};
  if (head.chat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (first || !delta_text.empty()) delta["content"] = delta_text;
    if (tool_calls != nullptr && !tool_calls->empty()) {
      delta["tool_calls"] = ToolCallsJson(*tool_calls, /*with_index=*/true);
    }
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = delta_text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = NullIfEmpty(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  return Event(j);
}

std::string UsageEvent(const Response& head) {
  Json j = Envelope(head, head.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = UsageJson(head.usage);
  return Event(j);
}

namespace {
Json ModelObject(const std::string& id, int64_t created, const std::string& owned_by) {
  return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", owned_by}};
}
}  // namespace

std::string ModelsJson(const std::vector<std::string>& ids, int64_t created,
                       const std::string& owned_by) {
  Json data = Json::array();
  for (const std::string& id : ids) data.push_back(ModelObject(id, created, owned_by));
  return Dump(Json{{"object", "list"}, {"data", std::move(data)}});
}

std::string ModelJson(const std::string& id, int64_t created, const std::string& owned_by) {
  return Dump(ModelObject(id, created, owned_by));
}

}  // namespace switchyard::frontends::openai
