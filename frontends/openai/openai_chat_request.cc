// Chat Completions' own request fields (see openai_chat_request.h).
#include "frontends/openai/openai_chat_request.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace switchyard::frontends::openai::detail {
namespace {

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

}  // namespace

Status ParseChatFields(const Json& j, Request* r) {
  SY_RETURN_IF_ERROR(ParseMessages(j, r));
  SY_RETURN_IF_ERROR(ParseTools(j, r));
  SY_RETURN_IF_ERROR(ParseToolChoice(j, r));
  return ParseChatIgnored(j);
}

}  // namespace switchyard::frontends::openai::detail
