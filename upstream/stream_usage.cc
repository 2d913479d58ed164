#include "upstream/stream_usage.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace switchyard::upstream {

bool AskUsage(http::HttpRequest* req) {
  const std::string_view path = req->path();
  if (path != "/v1/chat/completions" && path != "/v1/completions") return false;
  nlohmann::json body = nlohmann::json::parse(req->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || body.value("stream", false) != true) return false;
  nlohmann::json& options = body["stream_options"];
  if (options.is_null()) options = nlohmann::json::object();
  if (!options.is_object()) return false;  // the upstream says what is wrong with it
  if (options.value("include_usage", false) == true) return false;
  options["include_usage"] = true;
  req->body = body.dump();
  return true;
}

bool UsageEventFilter::IsUsageEvent(std::string_view event) {
  size_t at = event.find("data:");
  if (at == std::string_view::npos) return false;
  std::string_view data = event.substr(at + 5);
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto choices = j.find("choices");
  auto usage = j.find("usage");
  return choices != j.end() && choices->is_array() && choices->empty() && usage != j.end() &&
         usage->is_object();
}

std::string UsageEventFilter::Filter(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    if (passing_) {  // an overlong event: passes until its blank line
      const size_t end = bytes.find("\n\n");
      const size_t n = end == std::string_view::npos ? bytes.size() : end + 2;
      out.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      if (end != std::string_view::npos) passing_ = false;
      continue;
    }
    const size_t before = held_.size();
    held_.append(bytes);
    bytes = {};
    size_t from = 0;
    for (;;) {
      // An event ends at "\n\n" ("\r\n\r\n" ends with "\n\r\n": also checked); what was
      // held before this piece ended no event, so the search starts just before it.
      const size_t start = from > 0 ? from : (before > 3 ? before - 3 : 0);
      const size_t end = held_.find("\n\n", start);
      const size_t crlf = held_.find("\n\r\n", start);
      const size_t stop = std::min(end == std::string::npos ? std::string::npos : end + 2,
                                   crlf == std::string::npos ? std::string::npos : crlf + 3);
      if (stop == std::string::npos) break;
      std::string_view event(held_.data() + from, stop - from);
      if (!IsUsageEvent(event)) out.append(event);
      from = stop;
    }
    held_.erase(0, from);
    if (held_.size() > kMaxEventBytes) {
      out.append(held_);
      held_.clear();
      passing_ = true;
    }
  }
  return out;
}

}  // namespace switchyard::upstream
