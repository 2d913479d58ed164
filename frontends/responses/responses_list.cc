// GET /v1/responses/{id}/input_items (see responses_object.h): its query parameters and the
// list object of a stored response's input items.
#include <algorithm>

#include "frontends/responses/responses_json.h"
#include "frontends/responses/responses_object.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Bad;
using detail::Json;
using detail::Quoted;

constexpr int kMaxLimit = 100;

// A decimal integer in [1, kMaxLimit], or nullopt.
std::optional<int> Limit(const std::string& s) {
  if (s.empty() || s.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > kMaxLimit) return std::nullopt;
  return v;
}

}  // namespace

Result<ListParams> ParseListParams(const std::map<std::string, std::string>& query) {
  ListParams p;
  if (auto it = query.find("order"); it != query.end()) {
    if (it->second != "asc" && it->second != "desc") {
      return Bad("order", "expected \"asc\" or \"desc\", got " + Quoted(it->second));
    }
    p.ascending = it->second == "asc";
  }
  if (auto it = query.find("limit"); it != query.end()) {
    std::optional<int> limit = Limit(it->second);
    if (!limit) return Bad("limit", "must be an integer from 1 to 100, got " + Quoted(it->second));
    p.limit = *limit;
  }
  if (auto it = query.find("after"); it != query.end()) p.after = it->second;
  return p;
}

Result<std::string> InputItemsJson(const StoredResponse& r, const ListParams& params) {
  std::vector<const Item*> order;
  for (const Item& item : r.input) order.push_back(&item);
  if (!params.ascending) std::reverse(order.begin(), order.end());
  size_t start = 0;
  if (!params.after.empty()) {
    auto it = std::find_if(order.begin(), order.end(),
                           [&](const Item* item) { return item->id == params.after; });
    if (it == order.end()) return Bad("after", "no input item " + Quoted(params.after));
    start = static_cast<size_t>(it - order.begin()) + 1;
  }
  const size_t limit = static_cast<size_t>(std::clamp(params.limit, 1, kMaxLimit));
  const size_t end = std::min(order.size(), start + limit);
  Json data = Json::array();
  for (size_t i = start; i < end; ++i) data.push_back(detail::ItemJson(*order[i]));
  Json list = {{"object", "list"},
               {"data", std::move(data)},
               {"first_id", start < end ? Json(order[start]->id) : Json()},
               {"last_id", start < end ? Json(order[end - 1]->id) : Json()},
               {"has_more", end < order.size()}};
  return detail::Dump(list);
}

}  // namespace switchyard::frontends::responses
