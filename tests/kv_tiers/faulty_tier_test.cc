#include "kv_tiers/faulty_tier.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "kv_tiers/disk_tier.h"
#include "manager_fixture.h"
#include "test_util.h"

namespace switchyard::kv_tiers {
namespace {

std::unique_ptr<FaultyTier> Wrap(FaultSpec spec, uint32_t ops = kFaultWrite | kFaultRead,
                                 std::function<void(Duration)> wait = nullptr) {
  return std::make_unique<FaultyTier>(testing::MakeTier("host", testing::Opts(8)), spec, ops,
                                      std::move(wait));
}

// Outcomes (true = ok) of `n` one-block writes.
std::vector<bool> WriteOutcomes(FaultyTier& t, const Extent& e, int n) {
  auto data = testing::Pattern(4096, 5);
  std::vector<bool> out;
  for (int i = 0; i < n; ++i) {
    BlockWrite w{e, data.data(), 4096};
    out.push_back(t.Write(std::span<const BlockWrite>(&w, 1)).ok());
  }
  return out;
}

TEST(FaultyTier, FailAfterNPassesNCallsThenFailsEveryOne) {
  FaultSpec spec;
  spec.fail_after = 2;
  auto t = Wrap(spec);
  Extent e = t->Allocate("t", 4096).value();  // Allocate is not selected: no fault
  EXPECT_EQ(WriteOutcomes(*t, e, 5), (std::vector<bool>{true, true, false, false, false}));
  EXPECT_EQ(t->injected_failures(), 3u);
  EXPECT_EQ(t->calls(), 5u);
  std::vector<char> out(4096);
  BlockRead r{e, out.data(), 4096};
  Status st = t->Read(std::span<const BlockRead>(&r, 1));
  EXPECT_TRUE(st.IsUnavailable());
  EXPECT_NE(st.message().find("fault injection: faulty(host): read"), std::string::npos) << st;
}

TEST(FaultyTier, FailRateIsSeededAndDeterministic) {
  FaultSpec spec;
  spec.fail_rate = 0.5;
  spec.seed = 7;
  auto a = Wrap(spec), b = Wrap(spec);
  Extent ea = a->Allocate("t", 4096).value(), eb = b->Allocate("t", 4096).value();
  auto oa = WriteOutcomes(*a, ea, 40), ob = WriteOutcomes(*b, eb, 40);
  EXPECT_EQ(oa, ob);
  EXPECT_GT(a->injected_failures(), 5u);
  EXPECT_LT(a->injected_failures(), 35u);
}

TEST(FaultyTier, PartialWriteStoresHalfTheFirstBlock) {
  FaultSpec spec;
  spec.fail_after = 0;
  auto t = Wrap(spec, kFaultWrite);
  Extent e = t->Allocate("t", 4096).value();
  std::memset(t->Data(e), 0, 4096);
  auto data = testing::Pattern(4096, 3);
  BlockWrite w{e, data.data(), 4096};
  EXPECT_TRUE(t->Write(std::span<const BlockWrite>(&w, 1)).IsUnavailable());
  auto* stored = static_cast<char*>(t->Data(e));
  EXPECT_EQ(std::memcmp(stored, data.data(), 2048), 0);
  EXPECT_NE(std::memcmp(stored + 2048, data.data() + 2048, 2048), 0);
}

TEST(FaultyTier, CorruptionFlipsOneByteOnWriteAndOnReadButReportsSuccess) {
  FaultSpec spec;
  spec.corrupt_rate = 1.0;
  auto t = Wrap(spec);
  Extent e = t->Allocate("t", 4096).value();
  auto data = testing::Pattern(4096, 4);
  BlockWrite w{e, data.data(), 4096};
  ASSERT_TRUE(t->Write(std::span<const BlockWrite>(&w, 1)).ok());
  auto* stored = static_cast<const char*>(t->Data(e));
  int diffs = 0;
  for (int i = 0; i < 4096; ++i) diffs += stored[i] != data[i];
  EXPECT_EQ(diffs, 1);
  EXPECT_EQ(testing::Pattern(4096, 4), data);  // the caller's source is untouched
  std::memcpy(t->Data(e), data.data(), 4096);
  std::vector<char> out(4096);
  BlockRead r{e, out.data(), 4096};
  ASSERT_TRUE(t->Read(std::span<const BlockRead>(&r, 1)).ok());
  EXPECT_NE(out, data);
  EXPECT_EQ(t->injected_corruptions(), 2u);
}

TEST(FaultyTier, DelayGoesThroughTheWaitFunctionOnSelectedOpsOnly) {
  ManualClock clock;
  FaultSpec spec;
  spec.delay = Millis(5);
  auto t = Wrap(spec, kFaultWrite, [&](Duration d) { clock.Advance(d); });
  Extent e = t->Allocate("t", 4096).value();
  Time start = clock.Now();
  EXPECT_EQ(WriteOutcomes(*t, e, 3), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(clock.Now() - start, Millis(15));
  std::vector<char> out(4096);
  BlockRead r{e, out.data(), 4096};
  ASSERT_TRUE(t->Read(std::span<const BlockRead>(&r, 1)).ok());  // reads not selected
  EXPECT_EQ(clock.Now() - start, Millis(15));
}

TEST(FaultyTier, AllocateFaultsAndAccountingFollowTheWrapper) {
  FaultSpec spec;
  spec.fail_after = 1;
  auto t = Wrap(spec, kFaultAllocate);
  t->SetTenantQuota("t", 8192);
  Extent e = t->Allocate("t", 4096).value();
  EXPECT_TRUE(t->Allocate("t", 4096).status().IsUnavailable());
  EXPECT_EQ(t->tenant_used_bytes("t"), 4096u);
  EXPECT_EQ(t->inner().tenant_used_bytes("t"), 4096u);
  ASSERT_TRUE(t->Free(e).ok());
  EXPECT_EQ(t->used_bytes(), 0u);
  EXPECT_EQ(t->inner().used_bytes(), 0u);
  EXPECT_EQ(t->name(), "faulty(host)");
  EXPECT_EQ(t->kind(), v1::TIER_HOST);
}

// Through the BlockManager: a move into a disk tier that corrupts or fails its writes
// never commits, and the source stays readable.
class FaultyDiskTest : public testing::ManagerTest {
 protected:
  void UseFaultyDisk(FaultSpec spec) {
    TierOptions d = testing::Opts(64);
    d.path = testing::TempDir("faulty_disk_" + std::to_string(spec.seed));
    auto disk = DiskTier::Open(d);
    ASSERT_TRUE(disk.ok()) << disk.status();
    faulty_ = new FaultyTier(std::move(disk).value(), spec, kFaultWrite);
    disk_.reset(faulty_);
    Build(nullptr);
  }
  FaultyTier* faulty_ = nullptr;
};

TEST_F(FaultyDiskTest, CorruptedWriteIsRejectedAtValidation) {
  FaultSpec spec;
  spec.corrupt_rate = 1.0;
  spec.seed = 11;
  UseFaultyDisk(spec);
  BlockId src = Committed(Spec("c", 0), "host", 3);
  auto tid = mgr_->Move(src, "faulty(disk)", MoveOptions{});
  ASSERT_TRUE(tid.ok()) << tid.status();
  TransferRecord rec = Await(*tid);
  EXPECT_NE(rec.state, v1::COMMITTED);
  EXPECT_FALSE(rec.committed_at.has_value());
  EXPECT_TRUE(rec.status.IsDataLoss()) << rec.status;
  EXPECT_EQ(faulty_->injected_corruptions(), 1u);
  EXPECT_EQ(ReadAll(src, Reader("c")), testing::Pattern(4096, 3));
}

TEST_F(FaultyDiskTest, FailedPartialWriteNeverCommits) {
  FaultSpec spec;
  spec.fail_after = 0;
  spec.seed = 12;
  UseFaultyDisk(spec);
  BlockId src = Committed(Spec("c", 0), "host", 4);
  auto tid = mgr_->Move(src, "faulty(disk)", MoveOptions{});
  ASSERT_TRUE(tid.ok()) << tid.status();
  TransferRecord rec = Await(*tid);
  EXPECT_NE(rec.state, v1::COMMITTED);
  EXPECT_FALSE(rec.validated_at.has_value());
  EXPECT_FALSE(rec.status.ok());
  EXPECT_EQ(faulty_->tenant_used_bytes("t"), 0u);  // the destination was freed
  EXPECT_EQ(ReadAll(src, Reader("c")), testing::Pattern(4096, 4));
}

}  // namespace
}  // namespace switchyard::kv_tiers
