// The request headers of the Anthropic front (see anthropic_headers.h).
#include "frontends/anthropic/anthropic_headers.h"

#include <string_view>

namespace switchyard::frontends::anthropic {
namespace {

constexpr size_t kMaxName = 64;
constexpr size_t kMaxHeader = 2048;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Header(const std::map<std::string, std::string>& headers, const char* name) {
  auto it = headers.find(name);
  return it == headers.end() ? "" : std::string(Trim(it->second));
}

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = Trim(s.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

// The token of "Bearer <token>" (scheme in any case), or "".
std::string BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = authorization[i];
    if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != kScheme[i]) return "";
  }
  return std::string(Trim(authorization.substr(kScheme.size())));
}

}  // namespace

Headers ParseHeaders(const std::map<std::string, std::string>& headers) {
  Headers h;
  h.api_key = Header(headers, "x-api-key");
  if (h.api_key.empty()) {
    h.api_key = BearerToken(Header(headers, "authorization"));
    h.api_key_from_bearer = !h.api_key.empty();
  }
  h.version = Header(headers, "anthropic-version");
  h.version_missing = h.version.empty();
  h.betas = SplitCommas(Header(headers, "anthropic-beta"));
  h.claude_code_session_id = Header(headers, "x-claude-code-session-id");
  h.claude_code_agent_id = Header(headers, "x-claude-code-agent-id");
  h.session_id = Header(headers, "x-session-id");
  return h;
}

std::string SessionKey::Key() const {
  if (session_id.empty()) return "";
  return agent_id.empty() ? session_id : session_id + "/agent/" + agent_id;
}

SessionKey SessionKeyOf(const Headers& h, const MessagesRequest& r) {
  SessionKey k;
  k.agent_id = h.claude_code_agent_id;
  for (const std::string* id : {&h.claude_code_session_id, &h.session_id, &r.metadata_session_id}) {
    if (!id->empty()) {
      k.session_id = *id;
      return k;
    }
  }
  k.session_id = r.metadata_user_id;
  k.from_user = !k.session_id.empty();
  return k;
}

std::vector<std::string> IgnoredOf(const Headers& h, const MessagesRequest& r) {
  std::vector<std::string> out = r.ignored;
  for (const std::string& beta : h.betas) out.push_back("anthropic-beta:" + beta);
  return out;
}

std::string IgnoredHeaderValue(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    std::string clean;
    for (char c : name) {
      if (c > ' ' && c < 0x7f && c != ',' && clean.size() < kMaxName) clean += c;
    }
    if (clean.empty()) continue;
    const size_t need = (out.empty() ? 0 : 2) + clean.size();
    if (out.size() + need + 5 > kMaxHeader) {  // 5: room for ", ..."
      out += out.empty() ? "..." : ", ...";
      break;
    }
    if (!out.empty()) out += ", ";
    out += clean;
  }
  return out;
}

}  // namespace switchyard::frontends::anthropic
