// Contract tests run against every mover on the tier pairs it serves (TEST_P); the CUDA
// mover skips cleanly where it is not compiled in or no device answers.
#include <gtest/gtest.h>

#include "test_util.h"

namespace switchyard::kv_tiers {
namespace {

struct MoverCase {
  std::string mover, src, dst;
};

class MoverContract : public ::testing::TestWithParam<MoverCase> {
 protected:
  void SetUp() override {
    const auto& p = GetParam();
    for (const auto& name : {p.mover}) {
      std::string skip = testing::SkipReason(name, /*is_mover=*/true);
      if (!skip.empty()) GTEST_SKIP() << skip;
    }
    for (const auto& name : {p.src, p.dst}) {
      std::string skip = testing::SkipReason(name, /*is_mover=*/false);
      if (!skip.empty()) GTEST_SKIP() << skip;
    }
    src_ = MakeTierFor(p.src, "src");
    dst_ = MakeTierFor(p.dst, "dst");
    ASSERT_TRUE(src_ && dst_);
    MoverEnv env;
    env.loop = &loop_;
    env.chunk_bytes = 4096;  // several chunks per segment
    env.inline_bytes = 0;    // and every move through the pool (inline moves: below)
    auto m = MoverRegistry::Global().Create(p.mover, env);
    ASSERT_TRUE(m.ok()) << m.status();
    mover_ = std::move(m).value();
  }
  std::unique_ptr<Tier> MakeTierFor(const std::string& name, const std::string& tag) {
    TierOptions o = testing::Opts(8, 16384);
    if (name == "rocksdb") o.path = testing::TempDir("mover_" + tag);
    return testing::MakeTier(name, o);
  }
  // Fills `n` source extents with patterns and allocates `n` destination extents.
  MoveRequest Prepare(int n, std::vector<std::vector<char>>* data) {
    MoveRequest req;
    req.src = src_.get();
    req.dst = dst_.get();
    for (int i = 0; i < n; ++i) {
      Extent s = src_->Allocate("t", 16384).value();
      Extent d = dst_->Allocate("t", 16384).value();
      data->push_back(testing::Pattern(16384, 100 + i));
      BlockWrite w{s, data->back().data(), 16384};
      EXPECT_TRUE(src_->Write(std::span<const BlockWrite>(&w, 1)).ok());
      req.segments.push_back({s, d, 16384});
    }
    return req;
  }
  std::vector<char> ReadDst(const Extent& e) {
    std::vector<char> out(e.bytes);
    BlockRead r{e, out.data(), out.size()};
    EXPECT_TRUE(dst_->Read(std::span<const BlockRead>(&r, 1)).ok());
    return out;
  }

  VirtualEventLoop loop_;
  std::unique_ptr<Tier> src_, dst_;
  std::unique_ptr<Mover> mover_;
};

TEST_P(MoverContract, CopiesEverySegmentAndPostsOneCompletion) {
  std::vector<std::vector<char>> data;
  MoveRequest req = Prepare(3, &data);
  auto segs = req.segments;
  ASSERT_TRUE(mover_->Supports(*src_, *dst_));
  int calls = 0;
  Status seen = Status::Internal("unset");
  auto h = mover_->Submit(std::move(req), [&](const Status& s) {
    ++calls;
    seen = s;
  });
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->wait().ok());
  EXPECT_TRUE(h->done());
  EXPECT_EQ(calls, 0);  // completion runs on the loop, not on the worker
  ASSERT_TRUE(testing::DrainUntil(loop_, [&] { return calls > 0; }));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(seen.ok()) << seen;
  for (size_t i = 0; i < segs.size(); ++i) EXPECT_EQ(ReadDst(segs[i].dst), data[i]) << i;
}

TEST_P(MoverContract, WaitForAndHandleDestructorWaitForTheMove) {
  std::vector<std::vector<char>> data;
  MoveRequest req = Prepare(2, &data);
  {
    auto h = mover_->Submit(std::move(req), nullptr);
    ASSERT_TRUE(h.ok());
    auto st = h->wait_for(Seconds(20));
    ASSERT_TRUE(st.has_value());
  }
  std::vector<std::vector<char>> data2;
  MoveRequest req2 = Prepare(2, &data2);
  bool called = false;
  {
    auto h = mover_->Submit(std::move(req2), [&](const Status&) { called = true; });
    ASSERT_TRUE(h.ok());
  }  // destructor cancels or waits: either way the move has ended and posted
  EXPECT_EQ(loop_.pending(), 1u);
  loop_.Run();
  EXPECT_TRUE(called);
}

TEST_P(MoverContract, CancelEndsWithCancelledOrOk) {
  std::vector<std::vector<char>> data;
  MoveRequest req = Prepare(4, &data);
  auto h = mover_->Submit(std::move(req), nullptr);
  ASSERT_TRUE(h.ok());
  h->Cancel();
  Status st = h->wait();
  EXPECT_TRUE(st.ok() || st.IsCancelled()) << st;
}

TEST_P(MoverContract, RejectsBadRequests) {
  MoveRequest empty;
  empty.src = src_.get();
  empty.dst = dst_.get();
  EXPECT_TRUE(mover_->Submit(empty, nullptr).status().IsInvalidArgument());
  std::vector<std::vector<char>> data;
  MoveRequest big = Prepare(1, &data);
  big.segments[0].bytes = 1 << 20;  // larger than both extents
  EXPECT_TRUE(mover_->Submit(big, nullptr).status().IsInvalidArgument());
  MoveRequest backwards;  // a pair this mover does not serve (same tier, if unsupported)
  backwards.src = dst_.get();
  backwards.dst = dst_.get();
  backwards.segments.push_back({{0, 16384}, {1, 16384}, 16384});
  if (!mover_->Supports(*dst_, *dst_)) {
    EXPECT_TRUE(mover_->Submit(backwards, nullptr).status().IsNotSupported());
  }
}

INSTANTIATE_TEST_SUITE_P(AllMovers, MoverContract,
                         ::testing::Values(MoverCase{"local", "host", "emulated-hbm"},
                                           MoverCase{"local", "emulated-hbm", "host"},
                                           MoverCase{"disk", "host", "rocksdb"},
                                           MoverCase{"disk", "rocksdb", "host"},
                                           MoverCase{"disk", "emulated-hbm", "rocksdb"},
                                           MoverCase{"cuda", "pinned-host", "cuda-hbm"},
                                           MoverCase{"cuda", "cuda-hbm", "pinned-host"},
                                           MoverCase{"cuda", "cuda-hbm", "cuda-hbm"}),
                         [](const auto& info) {
                           std::string n =
                               info.param.mover + "_" + info.param.src + "_to_" + info.param.dst;
                           for (auto& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

TEST(MoverSet, SelectsByCapabilityAndPreference) {
  VirtualEventLoop loop;
  MoverEnv env;
  env.loop = &loop;
  auto set = MoverRegistry::Global().CreateAvailable(env);
  ASSERT_TRUE(set.ok()) << set.status();
  auto host = testing::MakeTier("host", testing::Opts(2));
  auto hbm = testing::MakeTier("emulated-hbm", testing::Opts(2));
  TierOptions d = testing::Opts(2);
  d.path = testing::TempDir("moverset");
  auto disk = testing::MakeTier("rocksdb", d);
  EXPECT_EQ(set->Select(*host, *hbm).value()->name(), "local");
  EXPECT_EQ(set->Select(*hbm, *disk).value()->name(), "disk");
  EXPECT_EQ(set->Select(*disk, *host).value()->name(), "disk");
  EXPECT_TRUE(set->Select(*disk, *disk).status().IsNotSupported());
  EXPECT_TRUE(MoverRegistry::Global().Create("nope", env).status().IsNotFound());
  EXPECT_TRUE(MoverRegistry::Global().Create("local", MoverEnv{}).status().IsInvalidArgument());
}

// Small local moves are copied on the submitting thread; the completion still arrives
// through the loop, and the bytes are exact.
TEST(LocalMoverInlineTest, SmallMoveCompletesThroughTheLoop) {
  VirtualEventLoop loop;
  MoverEnv env;
  env.loop = &loop;
  env.inline_bytes = 1 << 20;
  auto mover = MoverRegistry::Global().Create("local", env);
  ASSERT_TRUE(mover.ok()) << mover.status();
  auto src = testing::MakeTier("host", testing::Opts(4, 65536));
  auto dst = testing::MakeTier("emulated-hbm", testing::Opts(4, 65536));
  ASSERT_TRUE(src && dst);
  Extent s = src->Allocate("t", 65536).value();
  Extent d = dst->Allocate("t", 65536).value();
  std::vector<char> data = testing::Pattern(65536, 7);
  BlockWrite w{s, data.data(), data.size()};
  ASSERT_TRUE(src->Write(std::span<const BlockWrite>(&w, 1)).ok());
  MoveRequest req;
  req.src = src.get();
  req.dst = dst.get();
  req.segments.push_back({s, d, 65536});
  bool called = false;
  auto h = (*mover)->Submit(std::move(req), [&](Status st) {
    EXPECT_TRUE(st.ok()) << st;
    called = true;
  });
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->wait().ok());
  EXPECT_FALSE(called) << "the callback runs on the loop, not inside Submit";
  loop.Run();
  EXPECT_TRUE(called);
  std::vector<char> out(65536);
  BlockRead r{d, out.data(), out.size()};
  ASSERT_TRUE(dst->Read(std::span<const BlockRead>(&r, 1)).ok());
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace switchyard::kv_tiers
