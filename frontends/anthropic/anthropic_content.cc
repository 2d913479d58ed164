// The conversation of a Messages request (see anthropic_content.h).
#include "frontends/anthropic/anthropic_content.h"

#include <utility>
#include <vector>

namespace switchyard::frontends::anthropic::detail {
namespace {

using Kind = CacheBreakpoint::On;

void Join(std::string* out, const std::string& text) {
  if (!out->empty()) *out += '\n';
  *out += text;
}

// A content block's type; the block must be an object with a string `type`.
Status BlockType(const Json& b, const std::string& p, std::string* type) {
  if (!b.is_object()) return WrongType(p, b, "an object");
  return RequireString(b, p, "type", type);
}

// The 400 for a block type this front does not take at p.
Status Unsupported(const std::string& type, const std::string& p) {
  if (type == "image") return Bad(p, "image blocks are not supported (the model has no vision)");
  if (type == "document") return Bad(p, "document blocks are not supported");
  return Bad(p + ".type", "unsupported content block type " + Quoted(type));
}

Status AppendText(const Json& b, const std::string& p, std::string* out) {
  std::string text;
  SY_RETURN_IF_ERROR(RequireString(b, p, "text", &text));
  Join(out, text);
  return Status::OK();
}

// The breakpoints of one request turn (or the system), whose turns in the Conversation are
// known only once its blocks are read.
class Marks {
 public:
  Marks(Kind on, size_t index) : on_(on), index_(index) {}
  // The block's cache_control, if any, on the turn `message` (-1: the turn still to come).
  Status Read(const Json& b, const std::string& p, size_t block, int64_t message) {
    std::optional<std::string> ttl;
    SY_RETURN_IF_ERROR(ReadCacheControl(b, p, &ttl));
    if (!ttl) return Status::OK();
    CacheBreakpoint m;
    m.on = on_;
    m.index = on_ == Kind::kSystem ? block : index_;  // system[block], messages[index].content
    m.block = on_ == Kind::kSystem ? 0 : block;
    m.message = message;
    m.ttl = *ttl;
    marks_.push_back(std::move(m));
    return Status::OK();
  }
  // Appends them to r; those on the turn still to come land on `pending`.
  void Commit(int64_t pending, MessagesRequest* r) {
    for (CacheBreakpoint& m : marks_) {
      if (m.message < 0) m.message = pending;
      r->cache_breakpoints.push_back(std::move(m));
    }
  }

 private:
  Kind on_;
  size_t index_;
  std::vector<CacheBreakpoint> marks_;
};

// ---------------------------------------------------------------------------------------------
// Blocks of each role.

// tool_result.content: a string or text blocks.
Status ParseToolResultContent(const Json& b, const std::string& p, std::string* out) {
  const Json* c = Get(b, "content");
  if (c == nullptr) return Status::OK();
  if (c->is_string()) {
    *out = c->get<std::string>();
    return Status::OK();
  }
  const std::string cp = p + ".content";
  if (!c->is_array()) return WrongType(cp, *c, "a string or an array of text blocks");
  for (size_t k = 0; k < c->size(); ++k) {
    const std::string bp = Indexed(cp, k);
    std::string type;
    SY_RETURN_IF_ERROR(BlockType((*c)[k], bp, &type));
    if (type != "text") return Unsupported(type, bp);
    SY_RETURN_IF_ERROR(AppendText((*c)[k], bp, out));
  }
  return Status::OK();
}

Status ParseToolResult(const Json& b, const std::string& p, Message* tool) {
  tool->role = "tool";
  SY_RETURN_IF_ERROR(RequireString(b, p, "tool_use_id", &tool->tool_call_id));
  if (tool->tool_call_id.empty()) return Bad(p + ".tool_use_id", "must not be empty");
  SY_RETURN_IF_ERROR(ReadBool(b, p, "is_error", &tool->is_error));
  return ParseToolResultContent(b, p, &tool->content);
}

Status ParseToolUse(const Json& b, const std::string& p, ToolCall* call) {
  SY_RETURN_IF_ERROR(RequireString(b, p, "id", &call->id));
  if (call->id.empty()) return Bad(p + ".id", "must not be empty");
  SY_RETURN_IF_ERROR(RequireString(b, p, "name", &call->name));
  if (call->name.empty()) return Bad(p + ".name", "must not be empty");
  const Json* input = Get(b, "input");
  if (input == nullptr) return Bad(p + ".input", "required");
  if (!input->is_object()) return WrongType(p + ".input", *input, "an object");
  call->arguments = Dump(*input);
  return Status::OK();
}

// A user turn's blocks: its tool results, one tool turn each in order, then its text as one
// user turn (when it has text, or no tool results).
Status ParseUserBlocks(const Json& blocks, const std::string& p, Marks* marks, MessagesRequest* r) {
  std::vector<Message>& turns = r->conversation.messages;
  Message user{.role = "user"};
  bool text = false, results = false;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Json& b = blocks[k];
    const std::string bp = Indexed(p + ".content", k);
    std::string type;
    SY_RETURN_IF_ERROR(BlockType(b, bp, &type));
    if (type == "text") {
      SY_RETURN_IF_ERROR(AppendText(b, bp, &user.content));
      SY_RETURN_IF_ERROR(marks->Read(b, bp, k, -1));
      text = true;
    } else if (type == "tool_result") {
      Message tool;
      SY_RETURN_IF_ERROR(ParseToolResult(b, bp, &tool));
      turns.push_back(std::move(tool));
      SY_RETURN_IF_ERROR(marks->Read(b, bp, k, static_cast<int64_t>(turns.size()) - 1));
      results = true;
    } else if (type == "tool_use" || type == "thinking" || type == "redacted_thinking") {
      return Bad(bp, type + " blocks belong in assistant messages");
    } else {
      return Unsupported(type, bp);
    }
  }
  if (text || !results) turns.push_back(std::move(user));
  marks->Commit(static_cast<int64_t>(turns.size()) - 1, r);
  return Status::OK();
}

// An assistant turn's blocks: text -> content, thinking -> reasoning, tool_use -> tool_calls;
// redacted_thinking is dropped.
Status ParseAssistantBlocks(const Json& blocks, const std::string& p, Marks* marks,
                            MessagesRequest* r) {
  Message assistant{.role = "assistant"};
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Json& b = blocks[k];
    const std::string bp = Indexed(p + ".content", k);
    std::string type;
    SY_RETURN_IF_ERROR(BlockType(b, bp, &type));
    if (type == "text") {
      SY_RETURN_IF_ERROR(AppendText(b, bp, &assistant.content));
    } else if (type == "tool_use") {
      ToolCall call;
      SY_RETURN_IF_ERROR(ParseToolUse(b, bp, &call));
      assistant.tool_calls.push_back(std::move(call));
    } else if (type == "thinking") {
      std::string thinking;
      SY_RETURN_IF_ERROR(RequireString(b, bp, "thinking", &thinking));
      Join(&assistant.reasoning, thinking);
    } else if (type == "redacted_thinking") {
      continue;  // encrypted reasoning: nothing to render, and it cannot carry cache_control
    } else if (type == "tool_result") {
      return Bad(bp, "tool_result blocks belong in user messages");
    } else {
      return Unsupported(type, bp);
    }
    SY_RETURN_IF_ERROR(marks->Read(b, bp, k, -1));
  }
  r->conversation.messages.push_back(std::move(assistant));
  marks->Commit(static_cast<int64_t>(r->conversation.messages.size()) - 1, r);
  return Status::OK();
}

// Text blocks only (the system parameter, a system turn): joined into *out.
Status ParseTextBlocks(const Json& blocks, const std::string& p, Marks* marks, std::string* out) {
  for (size_t k = 0; k < blocks.size(); ++k) {
    const std::string bp = Indexed(p, k);
    std::string type;
    SY_RETURN_IF_ERROR(BlockType(blocks[k], bp, &type));
    if (type != "text") return Bad(bp + ".type", "only text blocks are allowed here");
    SY_RETURN_IF_ERROR(AppendText(blocks[k], bp, out));
    SY_RETURN_IF_ERROR(marks->Read(blocks[k], bp, k, -1));
  }
  return Status::OK();
}

Status ParseRole(const Json& m, const std::string& p, std::string* role) {
  SY_RETURN_IF_ERROR(RequireString(m, p, "role", role));
  if (*role == "user" || *role == "assistant" || *role == "system") return Status::OK();
  return Bad(p + ".role", "expected \"user\", \"assistant\" or \"system\", got " + Quoted(*role));
}

Status ParseTurn(const Json& m, size_t index, MessagesRequest* r) {
  const std::string p = Indexed("messages", index);
  if (!m.is_object()) return WrongType(p, m, "an object");
  Message turn;
  SY_RETURN_IF_ERROR(ParseRole(m, p, &turn.role));
  const Json* content = Get(m, "content");
  if (content == nullptr) return Bad(p + ".content", "required");
  if (content->is_string()) {
    turn.content = content->get<std::string>();
    r->conversation.messages.push_back(std::move(turn));
    return Status::OK();
  }
  if (!content->is_array()) {
    return WrongType(p + ".content", *content, "a string or an array of content blocks");
  }
  Marks marks(Kind::kMessage, index);
  if (turn.role == "user") return ParseUserBlocks(*content, p, &marks, r);
  if (turn.role == "assistant") return ParseAssistantBlocks(*content, p, &marks, r);
  SY_RETURN_IF_ERROR(ParseTextBlocks(*content, p + ".content", &marks, &turn.content));
  r->conversation.messages.push_back(std::move(turn));
  marks.Commit(static_cast<int64_t>(r->conversation.messages.size()) - 1, r);
  return Status::OK();
}

}  // namespace

Status ReadCacheControl(const Json& block, const std::string& p, std::optional<std::string>* ttl) {
  const Json* cc = nullptr;
  const std::string cp = p + ".cache_control";
  SY_RETURN_IF_ERROR(ReadObject(block, p, "cache_control", &cc));
  if (cc == nullptr) return Status::OK();
  std::string type, value = "5m";
  SY_RETURN_IF_ERROR(RequireString(*cc, cp, "type", &type));
  if (type != "ephemeral") return Bad(cp + ".type", "expected \"ephemeral\", got " + Quoted(type));
  SY_RETURN_IF_ERROR(ReadString(*cc, cp, "ttl", &value));
  if (value != "5m" && value != "1h") {
    return Bad(cp + ".ttl", "expected \"5m\" or \"1h\", got " + Quoted(value));
  }
  *ttl = value;
  return Status::OK();
}

Status ParseSystem(const Json& body, MessagesRequest* r) {
  const Json* v = Get(body, "system");
  if (v == nullptr) return Status::OK();
  Message system{.role = "system"};
  if (v->is_string()) {
    system.content = v->get<std::string>();
    if (!system.content.empty()) r->conversation.messages.push_back(std::move(system));
    return Status::OK();
  }
  if (!v->is_array()) return WrongType("system", *v, "a string or an array of text blocks");
  Marks marks(Kind::kSystem, 0);
  SY_RETURN_IF_ERROR(ParseTextBlocks(*v, "system", &marks, &system.content));
  if (v->empty()) return Status::OK();
  r->conversation.messages.push_back(std::move(system));
  marks.Commit(static_cast<int64_t>(r->conversation.messages.size()) - 1, r);
  return Status::OK();
}

Status ParseMessageList(const Json& body, MessagesRequest* r) {
  const Json* v = Get(body, "messages");
  if (v == nullptr) return Bad("messages", "required");
  if (!v->is_array()) return WrongType("messages", *v, "an array");
  if (v->empty()) return Bad("messages", "must not be empty");
  for (size_t i = 0; i < v->size(); ++i) SY_RETURN_IF_ERROR(ParseTurn((*v)[i], i, r));
  const Json* role = Get(v->back(), "role");
  r->assistant_prefill = role != nullptr && *role == "assistant";
  return Status::OK();
}

}  // namespace switchyard::frontends::anthropic::detail
