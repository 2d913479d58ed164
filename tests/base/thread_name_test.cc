#include "base/thread_name.h"

#include <gtest/gtest.h>

#include <thread>

namespace switchyard {
namespace {

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  std::string before = CurrentThreadName();
  std::string seen;
  std::thread([&] {
    SetThreadName("sy-test");
    seen = CurrentThreadName();
  }).join();
  EXPECT_EQ(seen, "sy-test");
  EXPECT_EQ(CurrentThreadName(), before);
}

TEST(ThreadNameTest, LongNamesAreCutToTheKernelLimit) {
  std::string seen;
  std::thread([&] {
    SetThreadName("sy-a-very-long-thread-name");
    seen = CurrentThreadName();
  }).join();
  EXPECT_EQ(seen, "sy-a-very-long-");  // 15 bytes
}

}  // namespace
}  // namespace switchyard
