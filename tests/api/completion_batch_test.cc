#include "api/completion_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace switchyard::api {
namespace {

// A target thread's queue, standing in for an io_context: posts are recorded, run later.
struct FakeTarget {
  std::vector<CompletionBatch::Task> posted;
  CompletionBatch::Poster poster() {
    return [this](CompletionBatch::Task t) { posted.push_back(std::move(t)); };
  }
  void RunAll() {
    for (auto& t : posted) t();
    posted.clear();
  }
};

TEST(CompletionBatchTest, NoBatchIsOpenByDefault) {
  EXPECT_EQ(CompletionBatch::Current(), nullptr);
}

TEST(CompletionBatchTest, OnePostPerTargetInAddOrder) {
  FakeTarget a, b;
  std::vector<std::string> ran;
  {
    CompletionBatch batch;
    ASSERT_EQ(CompletionBatch::Current(), &batch);
    for (int i = 0; i < 3; ++i) {
      batch.Add(&a, a.poster(), [&ran, i] { ran.push_back("a" + std::to_string(i)); });
      batch.Add(&b, b.poster(), [&ran, i] { ran.push_back("b" + std::to_string(i)); });
    }
    EXPECT_EQ(batch.targets(), 2u);
    EXPECT_TRUE(a.posted.empty());  // nothing leaves before the batch closes
    EXPECT_TRUE(ran.empty());
  }
  EXPECT_EQ(CompletionBatch::Current(), nullptr);
  ASSERT_EQ(a.posted.size(), 1u);
  ASSERT_EQ(b.posted.size(), 1u);
  a.RunAll();
  b.RunAll();
  EXPECT_EQ(ran, (std::vector<std::string>{"a0", "a1", "a2", "b0", "b1", "b2"}));
}

TEST(CompletionBatchTest, NestedBatchesRestoreTheOuterOne) {
  FakeTarget t;
  int n = 0;
  CompletionBatch outer;
  {
    CompletionBatch inner;
    EXPECT_EQ(CompletionBatch::Current(), &inner);
    inner.Add(&t, t.poster(), [&n] { ++n; });
  }
  EXPECT_EQ(CompletionBatch::Current(), &outer);
  EXPECT_EQ(t.posted.size(), 1u);  // the inner batch posted on close
  t.RunAll();
  EXPECT_EQ(n, 1);
}

TEST(CompletionBatchTest, ABatchBelongsToItsThread) {
  CompletionBatch batch;
  CompletionBatch* seen = &batch;
  std::thread([&] { seen = CompletionBatch::Current(); }).join();
  EXPECT_EQ(seen, nullptr);
}

}  // namespace
}  // namespace switchyard::api
