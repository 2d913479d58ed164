// What proxy mode reads of an upstream's streamed answer (see upstream_stream.h).
#include "upstream/upstream_stream.h"

#include <nlohmann/json.hpp>

namespace switchyard::upstream {

int64_t UpstreamInt(const nlohmann::json& o, const char* key, int64_t fallback) {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string UpstreamString(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

void UpstreamStreamReader::Read(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    bytes = nl == std::string_view::npos ? std::string_view() : bytes.substr(nl + 1);
    const bool ended = nl != std::string_view::npos;
    if (!skipping_ && partial_.size() + piece.size() > kMaxLineBytes) {
      skipping_ = true;
      partial_.clear();
      partial_.shrink_to_fit();
    }
    if (!ended) {
      if (!skipping_) partial_.append(piece);
      return;
    }
    if (skipping_) {
      skipping_ = false;
    } else if (partial_.empty()) {
      Line(piece);
    } else {
      partial_.append(piece);
      Line(partial_);
      partial_.clear();
    }
  }
}

void UpstreamStreamReader::Line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  constexpr std::string_view kData = "data:";
  if (line.substr(0, kData.size()) != kData) return;  // event:, id:, comments, blank
  line.remove_prefix(kData.size());
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  Data(line);
}

void UpstreamStreamReader::End(std::vector<std::string>* tools, int64_t* output_tokens) {
  if (!skipping_ && !partial_.empty()) Line(partial_);  // a last line with no newline
  partial_.clear();
  skipping_ = false;
  tools->clear();
  for (auto& [index, name] : tools_) tools->push_back(name.empty() ? "tool" : name);
  *output_tokens = output_tokens_;
}

void UpstreamStreamReader::Tool(int64_t index, const std::string& name) {
  std::string& slot = tools_[index];
  if (!name.empty()) slot = name;
}

}  // namespace switchyard::upstream
