// The request headers the Responses front reads (see responses_headers.h).
#include "frontends/responses/responses_headers.h"

#include <algorithm>
#include <cctype>

#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Bad;

constexpr size_t kMaxIdBytes = 256;

// The first non-empty of `names` in `headers`, and which it was (nullptr if none).
const std::string* First(const std::map<std::string, std::string>& headers,
                         std::initializer_list<const char*> names, const char** which) {
  for (const char* name : names) {
    auto it = headers.find(name);
    if (it != headers.end() && !it->second.empty()) {
      *which = name;
      return &it->second;
    }
  }
  return nullptr;
}

// An id header: at most kMaxIdBytes of printable ASCII.
Status ReadId(const std::map<std::string, std::string>& headers,
              std::initializer_list<const char*> names, std::string* out) {
  const char* which = nullptr;
  const std::string* v = First(headers, names, &which);
  if (v == nullptr) return Status::OK();
  if (v->size() > kMaxIdBytes) return Bad(which, "at most 256 bytes");
  bool printable = std::all_of(v->begin(), v->end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (!printable) return Bad(which, "must be printable ASCII");
  *out = *v;
  return Status::OK();
}

// "Bearer <token>" (the scheme in any case), else "".
std::string BearerToken(const std::string& value) {
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return "";
  }
  std::string token = value.substr(kScheme.size());
  token.erase(0, token.find_first_not_of(' '));
  while (!token.empty() && token.back() == ' ') token.pop_back();
  return token;
}

bool IsIgnoredHeader(const std::string& name) {
  return name == "chatgpt-account-id" || name == "openai-beta" || name == "version" ||
         name.rfind("x-codex-", 0) == 0;
}

}  // namespace

Result<Headers> ParseHeaders(const std::map<std::string, std::string>& headers) {
  Headers h;
  SY_RETURN_IF_ERROR(ReadId(headers, {"session-id", "session_id"}, &h.session_id));
  SY_RETURN_IF_ERROR(ReadId(headers, {"thread-id", "thread_id", "conversation_id"}, &h.thread_id));
  SY_RETURN_IF_ERROR(ReadId(headers, {"x-client-request-id"}, &h.client_request_id));
  if (auto it = headers.find("originator"); it != headers.end()) h.originator = it->second;
  if (auto it = headers.find("authorization"); it != headers.end()) {
    h.bearer_token = BearerToken(it->second);
  }
  for (const auto& [name, value] : headers) {
    if (IsIgnoredHeader(name)) h.ignored.push_back(name);
  }
  return h;
}

std::string SessionIdOf(const Headers& headers, const CreateRequest& request) {
  if (!headers.thread_id.empty()) return headers.thread_id;
  if (!headers.session_id.empty()) return headers.session_id;
  if (!request.prompt_cache_key.empty()) return request.prompt_cache_key;
  if (auto it = request.metadata.find("session_id"); it != request.metadata.end()) {
    if (!it->second.empty()) return it->second;
  }
  return request.user;
}

}  // namespace switchyard::frontends::responses
