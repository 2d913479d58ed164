// Helpers shared by the replay tests (not a test file itself).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "proto/json.h"

namespace switchyard::replay::testing {

// The text of tests/fixtures/`name` ("" and a test failure when it cannot be read).
inline std::string ReadFixture(const std::string& name) {
  auto text = proto::ReadFile(std::string(SY_SOURCE_DIR) + "/tests/fixtures/" + name);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

}  // namespace switchyard::replay::testing
