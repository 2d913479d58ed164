// The mutations the fronts' fuzz tests share (tests/frontends/*_fuzz_test.cc): byte-level
// edits of a body with a protocol's tokens, members replaced by values of the wrong type,
// removed or added, and the iteration count from the environment.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace switchyard::frontends::fuzz {

using Json = nlohmann::ordered_json;

inline uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

template <typename T, size_t N>
const T& Pick(const T (&items)[N], std::mt19937_64& rng) {
  return items[rng() % N];
}

// Byte-level edits of a body: 1 to 4 of a random byte, a cut, a token of `tokens`
// inserted, truncation, a piece of the body repeated.
template <size_t N>
std::string MutateBytes(std::string s, std::mt19937_64& rng, const std::string (&tokens)[N]) {
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t pos = rng() % s.size();
    switch (rng() % 5) {
      case 0:
        s[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        s.insert(pos, Pick(tokens, rng));
        break;
      case 3:
        s = s.substr(0, pos);
        break;
      default:
        s.insert(pos, s.substr(rng() % s.size(), 1 + rng() % 16));
        break;
    }
  }
  return s;
}

// A value of a random type (the wrong one, mostly).
inline Json RandomValue(std::mt19937_64& rng, const Json& original) {
  switch (rng() % 15) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return -1;
    case 3:
      return 0;
    case 4:
      return 2;
    case 5:
      return 1e308;
    case 6:
      return std::numeric_limits<uint64_t>::max();
    case 7:
      return "";
    case 8:
      return std::string("x\xff\xc3y");  // invalid UTF-8; written with U+FFFD
    case 9:
      return Json::array();
    case 10:
      return Json::object();
    case 11: {
      Json deep = "leaf";
      for (int i = 0, n = 5 + static_cast<int>(rng() % 40); i < n; ++i) deep = Json::array({deep});
      return deep;
    }
    case 12:
      return Json::array({original, original});
    case 13:
      return 2048;
    default:
      return original.dump();
  }
}

inline void CollectPointers(const Json& j, const Json::json_pointer& at,
                            std::vector<Json::json_pointer>* out) {
  out->push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) CollectPointers(v, at / k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) CollectPointers(j[i], at / i, out);
  }
}

// A member or element replaced by a random value, removed, or a new unknown member added.
inline std::string MutateStructure(const Json& seed, std::mt19937_64& rng) {
  Json j = seed;
  std::vector<Json::json_pointer> ptrs;
  CollectPointers(j, Json::json_pointer(), &ptrs);
  const Json::json_pointer at = ptrs[rng() % ptrs.size()];
  const int action = static_cast<int>(rng() % 6);
  if (action == 0 && !at.empty()) {
    Json& parent = j[at.parent_pointer()];
    if (parent.is_object()) parent.erase(at.back());
  } else if (action == 1 && j[at].is_object()) {
    j[at]["unknown_" + std::to_string(rng() % 10)] = RandomValue(rng, j[at]);
  } else {
    j[at] = RandomValue(rng, j[at]);
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

inline bool IsJson(const std::string& s) { return !Json::parse(s, nullptr, false).is_discarded(); }

}  // namespace switchyard::frontends::fuzz
