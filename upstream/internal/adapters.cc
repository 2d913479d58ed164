#include "upstream/internal/adapters.h"

#include <string>
#include <utility>

namespace switchyard::upstream::internal {
namespace {

const ProbeAnswer* Ok(const std::vector<ProbeAnswer>& answers, std::string_view path) {
  for (const ProbeAnswer& a : answers) {
    if (a.path == path && a.status >= 200 && a.status < 300) return &a;
  }
  return nullptr;
}

// Reads `key="value"` pairs from the inside of a label set; stops at a malformed one.
std::map<std::string, std::string> ReadLabels(std::string_view s) {
  std::map<std::string, std::string> labels;
  size_t i = 0;
  while (i < s.size()) {
    size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') break;
    std::string key(s.substr(i, eq - i));
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) ++j;  // \" \\ \n: keep the escaped character
      value += s[j];
    }
    labels[key] = value;
    i = j + 1;
    while (i < s.size() && (s[i] == ',' || s[i] == ' ')) ++i;
  }
  return labels;
}

}  // namespace

UpstreamCall ProbeCall(std::string path) {
  UpstreamCall call;
  call.kind = CallKind::kProbe;
  call.method = "GET";
  call.purpose = "probe " + path;
  call.path = std::move(path);
  return call;
}

UpstreamCall PostCall(CallKind kind, std::string path, const nlohmann::json& body,
                      std::string purpose) {
  UpstreamCall call;
  call.kind = kind;
  call.method = "POST";
  call.path = std::move(path);
  call.body = body.is_null() ? "" : body.dump();
  call.purpose = std::move(purpose);
  return call;
}

nlohmann::json ProbeJson(const std::vector<ProbeAnswer>& answers, std::string_view path) {
  const ProbeAnswer* a = Ok(answers, path);
  if (a == nullptr) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(a->body, nullptr, /*allow_exceptions=*/false);
}

std::string ProbeText(const std::vector<ProbeAnswer>& answers, std::string_view path) {
  const ProbeAnswer* a = Ok(answers, path);
  return a == nullptr ? "" : a->body;
}

std::map<std::string, std::string> PrometheusLabels(std::string_view text,
                                                    std::string_view metric) {
  size_t at = 0;
  while ((at = text.find(metric, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const size_t open = at + metric.size();
    at = open;
    if (!line_start || open >= text.size() || text[open] != '{') continue;
    size_t close = text.find('}', open);
    if (close == std::string_view::npos) return {};
    return ReadLabels(text.substr(open + 1, close - open - 1));
  }
  return {};
}

bool IsTrue(std::string_view value) { return value == "True" || value == "true" || value == "1"; }

Result<std::vector<UpstreamCall>> WarmupCalls(const UpstreamAdapter& adapter,
                                              const Capabilities& caps, const SessionRef& session,
                                              KvAction last_decision, const WarmupPrefix& prefix) {
  if (last_decision == KvAction::kKeep || !caps.prefix_caching.on) {
    return std::vector<UpstreamCall>{};
  }
  SY_ASSIGN_OR_RETURN(UpstreamCall call, MakeWarmup(prefix));
  nlohmann::json body = nlohmann::json::parse(call.body);
  adapter.Decorate(caps, session, last_decision, kWarmupPriority, &body, &call.headers);
  call.body = body.dump();
  call.purpose += " for session " + session.key;
  return std::vector<UpstreamCall>{std::move(call)};
}

}  // namespace switchyard::upstream::internal
