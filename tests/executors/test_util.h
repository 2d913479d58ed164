// Helpers shared by the executors tests (not a test file itself).
#pragma once

#include <string>

namespace switchyard::executors::testing {

// The path of `rel` under the source tree's configs/ ("models/llama-3.1-8b.json").
inline std::string ConfigPath(const std::string& rel) {
  return std::string(SY_SOURCE_DIR) + "/configs/" + rel;
}

}  // namespace switchyard::executors::testing
