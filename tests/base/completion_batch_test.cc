#include "base/completion_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "base/asio_event_loop.h"

namespace switchyard {
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

// The scheduler's loop gets one handler per batch: posts made while a batch is open run,
// in order, only after it closes; a Pause posts at once.
TEST(CompletionBatchTest, AnEventLoopGetsOneHandlerPerBatch) {
  AsioEventLoop loop;
  std::vector<int> ran;
  {
    CompletionBatch batch;
    for (int i = 0; i < 3; ++i) loop.Post([&ran, i] { ran.push_back(i); });
    EXPECT_EQ(loop.pending(), 3u);
    EXPECT_EQ(loop.io_context().poll(), 0u);  // nothing reached the loop yet
    {
      CompletionBatch::Pause pause;
      loop.Post([&ran] { ran.push_back(9); });
    }
    loop.io_context().restart();  // (poll() stopped the context when it found no work)
    EXPECT_EQ(loop.io_context().poll(), 1u);
    EXPECT_EQ(ran, std::vector<int>({9}));
  }
  loop.io_context().restart();
  EXPECT_EQ(loop.io_context().poll(), 1u);  // one handler ran the three posts
  EXPECT_EQ(ran, std::vector<int>({9, 0, 1, 2}));
  EXPECT_EQ(loop.pending(), 0u);
}

}  // namespace
}  // namespace switchyard
