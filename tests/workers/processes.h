// Child processes for the tests that run the `switchyard` binary (serve, joined workers):
// the helpers of tests/common/child_process.h (spawn with output to a log file, read a
// log, reap with a bound, kill on early return, a free TCP port) and the bounded wait of
// tests/common/wait_until.h, under switchyard::workers::testing, and the binary's path.
// Header-only: each test file is its own binary's part.
#pragma once

#include <filesystem>
#include <string>

#include "tests/common/child_process.h"
#include "tests/common/wait_until.h"

namespace switchyard::workers::testing {

using ::switchyard::testing::FreePort;
using ::switchyard::testing::KillOnExit;
using ::switchyard::testing::Reap;
using ::switchyard::testing::Slurp;
using ::switchyard::testing::Spawn;
using ::switchyard::testing::WaitUntil;

inline std::string Binary() { return std::string(SY_BINARY_DIR) + "/bin/switchyard"; }

}  // namespace switchyard::workers::testing

// In a test's body: skips when the `switchyard` binary has not been built.
#define SKIP_WITHOUT_BINARY()                                                            \
  if (!std::filesystem::exists(::switchyard::workers::testing::Binary()))                \
  GTEST_SKIP() << "no switchyard binary at " << ::switchyard::workers::testing::Binary() \
               << " (build the `switchyard` target: these tests start its worker)"
