#include "program_graph/validation.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string_view>

namespace switchyard::program_graph {
namespace {

// A node is named by its id only when the id is one (never echoing control characters).
std::string NodeName(const v1::ProgramNode& node, size_t position) {
  if (!IdProblem(node.id()).empty()) return "node #" + std::to_string(position);
  return "node '" + node.id() + "'";
}

bool IdChar(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

std::string Hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", c);
  return buf;
}

std::string CharAt(unsigned char c, size_t offset) {
  return std::string(c < 0x80 ? "character " : "non-ASCII byte ") + Hex(c) + " at offset " +
         std::to_string(offset);
}

Status Invalid(const std::string& who, std::string_view field, const std::string& problem) {
  return Status::InvalidArgument(who + ": " + std::string(field) + ": " + problem);
}

// A count or size hint: not negative, not above `limit` (limit < 0: no upper limit).
Status CheckRange(const std::string& who, std::string_view field, int64_t v, int64_t limit) {
  if (v < 0) return Invalid(who, field, std::to_string(v) + " is negative");
  if (limit >= 0 && v > limit) {
    return Invalid(who, field, std::to_string(v) + " exceeds the limit " + std::to_string(limit));
  }
  return Status::OK();
}

Status CheckDeadline(const std::string& who, int64_t deadline_ms, Time now) {
  if (deadline_ms < 0)
    return Invalid(who, "deadline_ms", std::to_string(deadline_ms) + " is negative");
  if (deadline_ms > kMaxDeadlineMs) {
    return Invalid(who, "deadline_ms", std::to_string(deadline_ms) + " is out of range");
  }
  if (deadline_ms != 0 && Time::FromMillis(deadline_ms) < now) {
    return Invalid(who, "deadline_ms",
                   std::to_string(deadline_ms) + " is in the past (now " +
                       std::to_string(now.millis()) + " ms)");
  }
  return Status::OK();
}

Status CheckHints(const std::string& who, const v1::Hints& h, const Limits& limits) {
  SY_RETURN_IF_ERROR(
      CheckRange(who, "hints.prompt_tokens", h.prompt_tokens(), limits.max_prompt_tokens));
  SY_RETURN_IF_ERROR(
      CheckRange(who, "hints.extend_tokens", h.extend_tokens(), limits.max_prompt_tokens));
  SY_RETURN_IF_ERROR(
      CheckRange(who, "hints.max_output_tokens", h.max_output_tokens(), limits.max_output_tokens));
  return CheckRange(who, "hints.expected_duration_ms", h.expected_duration_ms(),
                    limits.max_tool_duration_ms);
}

Status CheckRetry(const std::string& who, const v1::RetryPolicy& r) {
  SY_RETURN_IF_ERROR(CheckRange(who, "retry.max_attempts", r.max_attempts(), 1000));
  SY_RETURN_IF_ERROR(CheckRange(who, "retry.initial_backoff_ms", r.initial_backoff_ms(), -1));
  SY_RETURN_IF_ERROR(CheckRange(who, "retry.max_backoff_ms", r.max_backoff_ms(), -1));
  if (!(r.backoff_multiplier() >= 0) || r.backoff_multiplier() > 1000) {
    return Invalid(who, "retry.backoff_multiplier",
                   std::to_string(r.backoff_multiplier()) + " is outside [0, 1000]");
  }
  return Status::OK();
}

// A context starts with its shared prefix: only the ref creating it names one, with its
// tokens, and the creating node's prompt holds them.
Status CheckSharedPrefix(const std::string& who, const std::string& field,
                         const v1::ProgramNode& node, int k) {
  const v1::CacheRef& ref = node.cache_refs(k);
  const int64_t tokens = ref.shared_prefix_tokens();
  if (ref.shared_prefix().empty()) {
    if (tokens > 0)
      return Invalid(who, field + ".shared_prefix_tokens",
                     std::to_string(tokens) + " tokens without a shared_prefix id");
    return Status::OK();
  }
  if (std::string problem = IdProblem(ref.shared_prefix()); !problem.empty())
    return Invalid(who, field + ".shared_prefix", problem);
  if (ref.mode() != v1::CacheRef::CREATE)
    return Invalid(who, field + ".shared_prefix",
                   "'" + ref.shared_prefix() + "' on a ref that does not CREATE context '" +
                       ref.context() + "' (a context starts with its prefix)");
  if (tokens == 0)
    return Invalid(who, field + ".shared_prefix_tokens",
                   "missing (0) for shared prefix '" + ref.shared_prefix() + "'");
  const v1::Hints& h = node.hints();
  const int64_t prompt = std::max(h.prompt_tokens(), h.extend_tokens());
  if (k == 0 && node.kind() == v1::LLM && tokens > prompt)
    return Invalid(who, field + ".shared_prefix_tokens",
                   std::to_string(tokens) + " exceed the node's prompt of " +
                       std::to_string(prompt) + " tokens");
  return Status::OK();
}

Status CheckCacheRefs(const std::string& who, const v1::ProgramNode& node, const Limits& limits) {
  std::set<std::string_view> seen;
  for (int k = 0; k < node.cache_refs_size(); ++k) {
    const v1::CacheRef& ref = node.cache_refs(k);
    const std::string field = "cache_refs[" + std::to_string(k) + "]";
    if (ref.context().empty()) return Invalid(who, field + ".context", "empty context name");
    if (std::string problem = IdProblem(ref.context()); !problem.empty())
      return Invalid(who, field + ".context", problem);
    if (ref.mode() == v1::CacheRef::MODE_UNSPECIFIED || !v1::CacheRef::Mode_IsValid(ref.mode())) {
      return Invalid(
          who, field + ".mode",
          "unspecified mode for context '" + ref.context() + "' (want CREATE, READ or EXTEND)");
    }
    if (!seen.insert(ref.context()).second) {
      return Invalid(who, field + ".context", "context '" + ref.context() + "' referenced twice");
    }
    SY_RETURN_IF_ERROR(CheckRange(who, field + ".shared_prefix_tokens", ref.shared_prefix_tokens(),
                                  limits.max_prompt_tokens));
    SY_RETURN_IF_ERROR(CheckSharedPrefix(who, field, node, k));
    SY_RETURN_IF_ERROR(
        CheckRange(who, field + ".keep_tokens", ref.keep_tokens(), limits.max_prompt_tokens));
    if (ref.keep_tokens() > 0 && ref.mode() != v1::CacheRef::EXTEND)
      return Invalid(who, field + ".keep_tokens",
                     std::to_string(ref.keep_tokens()) +
                         " on a ref that does not EXTEND context '" + ref.context() +
                         "' (it says how much of the context the node continues)");
    if (ref.keep_tokens() > 0 && k > 0)
      return Invalid(who, field + ".keep_tokens",
                     "only the first ref (the context the node extends) may cut its context");
  }
  return Status::OK();
}

}  // namespace

std::string IdProblem(std::string_view id) {
  constexpr const char* kRule = " (ids are 1-128 bytes of A-Z a-z 0-9 . _ : -)";
  if (id.empty()) return std::string("empty") + kRule;
  if (id.size() > kMaxIdBytes) {
    return std::to_string(id.size()) + " bytes exceed the limit " + std::to_string(kMaxIdBytes) +
           kRule;
  }
  for (size_t i = 0; i < id.size(); ++i) {
    auto c = static_cast<unsigned char>(id[i]);
    if (!IdChar(c)) return CharAt(c, i) + " is not allowed" + kRule;
  }
  return "";
}

std::string ToolNameProblem(std::string_view name) {
  constexpr const char* kRule = " (tool names are 1-256 bytes of text without control characters)";
  if (name.empty()) return std::string("empty") + kRule;
  if (name.size() > kMaxToolNameBytes) {
    return std::to_string(name.size()) + " bytes exceed the limit " +
           std::to_string(kMaxToolNameBytes) + kRule;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7F) return CharAt(c, i) + " is not allowed" + kRule;
    // U+0080-U+009F (C1 controls) are 0xC2 0x80-0x9F in UTF-8.
    if (c == 0xC2 && i + 1 < name.size()) {
      auto next = static_cast<unsigned char>(name[i + 1]);
      if (next >= 0x80 && next <= 0x9F) {
        return "control character U+00" + Hex(next).substr(2) + " at offset " + std::to_string(i) +
               " is not allowed" + kRule;
      }
    }
  }
  return "";
}

Status ValidateWorkflowHeader(const v1::Workflow& wf, Time now) {
  // An id or tenant that is not an identifier is not echoed.
  if (!wf.id().empty()) {
    if (std::string problem = IdProblem(wf.id()); !problem.empty())
      return Invalid("workflow", "id", problem);
  }
  if (!wf.tenant().empty()) {
    if (std::string problem = IdProblem(wf.tenant()); !problem.empty())
      return Invalid("workflow '" + wf.id() + "'", "tenant", problem);
  }
  return CheckDeadline("workflow '" + wf.id() + "'", wf.deadline_ms(), now);
}

Status ValidateNodeFields(const v1::ProgramNode& node, size_t position, const v1::Workflow& wf,
                          const Limits& limits, Time now) {
  const std::string who = NodeName(node, position);
  if (node.id().empty()) return Invalid(who, "id", "empty node id");
  if (std::string problem = IdProblem(node.id()); !problem.empty())
    return Invalid(who, "id", problem);
  if (node.kind() != v1::LLM && node.kind() != v1::TOOL) {
    return Invalid(who, "kind", "unspecified (want LLM or TOOL)");
  }
  if (!node.tenant().empty() && node.tenant() != wf.tenant()) {
    if (!IdProblem(node.tenant()).empty()) return Invalid(who, "tenant", IdProblem(node.tenant()));
    return Invalid(
        who, "tenant",
        "'" + node.tenant() + "' differs from the workflow tenant '" + wf.tenant() + "'");
  }
  if (!node.tool_name().empty()) {
    if (std::string problem = ToolNameProblem(node.tool_name()); !problem.empty())
      return Invalid(who, "tool_name", problem);
  }
  SY_RETURN_IF_ERROR(CheckDeadline(who, node.deadline_ms(), now));
  if (node.deadline_ms() != 0 && wf.deadline_ms() != 0 && node.deadline_ms() > wf.deadline_ms()) {
    return Invalid(who, "deadline_ms",
                   std::to_string(node.deadline_ms()) + " is after the workflow deadline " +
                       std::to_string(wf.deadline_ms()));
  }
  SY_RETURN_IF_ERROR(CheckHints(who, node.hints(), limits));
  SY_RETURN_IF_ERROR(CheckRange(who, "timeout_ms", node.timeout_ms(), -1));
  SY_RETURN_IF_ERROR(CheckRetry(who, node.retry()));
  SY_RETURN_IF_ERROR(CheckCacheRefs(who, node, limits));
  if (static_cast<size_t>(node.deps_size()) > limits.max_edges_per_node) {
    return Invalid(who, "deps",
                   std::to_string(node.deps_size()) + " dependencies exceed the limit " +
                       std::to_string(limits.max_edges_per_node));
  }
  for (int k = 0; k < node.deps_size(); ++k) {
    if (std::string problem = IdProblem(node.deps(k)); !problem.empty())
      return Invalid(who, "deps[" + std::to_string(k) + "]", problem);
  }
  return Status::OK();
}

std::string RetryBlockReason(const v1::ProgramNode& node) {
  if (node.kind() == v1::TOOL && node.side_effect() && node.idempotency_key().empty()) {
    return "node '" + node.id() + "' is a side-effecting tool without an idempotency_key";
  }
  return "";
}

std::string CycleText(const std::vector<std::string>& ids) {
  std::string out = "cycle: ";
  for (const std::string& id : ids) out += id + " -> ";
  if (!ids.empty()) out += ids.front();
  return out;
}

}  // namespace switchyard::program_graph
