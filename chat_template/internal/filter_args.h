// The evaluated arguments of a filter call (internal to chat_template): positional values
// and keyword arguments, looked up as the reference does (positional i, else the keyword,
// else a default). Used by one render at a time.
#pragma once

#include <memory>
#include <vector>

#include "chat_template/internal/value.h"

namespace switchyard::chat_template::internal {

struct FilterArgs {
  std::vector<Value> pos;
  std::shared_ptr<ObjectData> kw;  // null when no keyword was given

  Value Get(size_t i, const char* name, Value fallback) const {
    if (i < pos.size()) return pos[i];
    return Keyword(name, std::move(fallback));
  }
  Value Keyword(const char* name, Value fallback) const {
    if (kw) {
      if (const Value* v = kw->Find(name)) return *v;
    }
    return fallback;
  }
};

}  // namespace switchyard::chat_template::internal
