// Contract tests run against every tier implementation (TEST_P); the CUDA ones skip
// cleanly where they are not compiled in or no device answers.
#include <gtest/gtest.h>

#include "kv_tiers/disk_tier.h"
#include "test_util.h"

namespace switchyard::kv_tiers {
namespace {

using testing::MakeTier;
using testing::Pattern;

class TierContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip = testing::SkipReason(GetParam(), /*is_mover=*/false);
    if (!skip.empty()) GTEST_SKIP() << skip;
    TierOptions o = testing::Opts(8);
    o.high_watermark = 0.5;
    o.low_watermark = 0.25;
    if (GetParam() == "rocksdb") o.path = testing::TempDir("contract");
    tier_ = MakeTier(GetParam(), o);
    ASSERT_NE(tier_, nullptr);
  }
  std::unique_ptr<Tier> tier_;
};

TEST_P(TierContract, WriteThenReadRoundTrips) {
  auto e = tier_->Allocate("t", 4096);
  ASSERT_TRUE(e.ok()) << e.status();
  auto data = Pattern(4096, 1);
  BlockWrite w{*e, data.data(), data.size()};
  ASSERT_TRUE(tier_->Write(std::span<const BlockWrite>(&w, 1)).ok());
  std::vector<char> out(4096);
  BlockRead r{*e, out.data(), out.size()};
  ASSERT_TRUE(tier_->Read(std::span<const BlockRead>(&r, 1)).ok());
  EXPECT_EQ(out, data);
  EXPECT_TRUE(tier_->Free(*e).ok());
  EXPECT_TRUE(tier_->Free(*e).IsNotFound());
  EXPECT_FALSE(tier_->Read(std::span<const BlockRead>(&r, 1)).ok());  // freed slot
}

TEST_P(TierContract, CapacityIsNeverExceeded) {
  std::vector<Extent> held;
  for (int i = 0; i < 20; ++i) {
    auto e = tier_->Allocate("t" + std::to_string(i % 3), 4096);
    if (!e.ok()) {
      EXPECT_TRUE(e.status().IsResourceExhausted()) << e.status();
      continue;
    }
    held.push_back(*e);
    EXPECT_LE(tier_->used_bytes(), tier_->capacity_bytes());
  }
  EXPECT_EQ(held.size(), 8u);
  EXPECT_EQ(tier_->used_bytes(), tier_->capacity_bytes());
  for (const auto& e : held) ASSERT_TRUE(tier_->Free(e).ok());
  EXPECT_EQ(tier_->used_bytes(), 0u);
}

TEST_P(TierContract, TenantQuotaIsEnforced) {
  tier_->SetTenantQuota("small", 2 * 4096);
  ASSERT_TRUE(tier_->Allocate("small", 4096).ok());
  ASSERT_TRUE(tier_->Allocate("small", 4096).ok());
  auto third = tier_->Allocate("small", 4096);
  ASSERT_FALSE(third.ok());
  EXPECT_TRUE(third.status().IsResourceExhausted());
  EXPECT_NE(third.status().message().find("small"), std::string::npos);
  EXPECT_TRUE(tier_->Allocate("other", 4096).ok());  // other tenants unaffected
  EXPECT_EQ(tier_->tenant_used_bytes("small"), 2u * 4096);
}

TEST_P(TierContract, WatermarksTrackUsage) {
  EXPECT_FALSE(tier_->AboveHighWatermark());
  std::vector<Extent> held;
  for (int i = 0; i < 5; ++i) held.push_back(tier_->Allocate("t", 4096).value());
  EXPECT_TRUE(tier_->AboveHighWatermark());               // 5/8 > 0.5
  EXPECT_EQ(tier_->BytesAboveLowWatermark(), 3u * 4096);  // down to 2 of 8
}

TEST_P(TierContract, BadSizesAreRejected) {
  EXPECT_TRUE(tier_->Allocate("t", 0).status().IsInvalidArgument());
}

TEST_P(TierContract, NameSaysWhatItIs) {
  auto caps = tier_->capabilities();
  if (tier_->kind() == v1::TIER_HBM && !caps.device_memory) {
    EXPECT_TRUE(caps.emulated);
    EXPECT_EQ(tier_->name(), "emulated-hbm");
  }
  if (caps.emulated) {
    EXPECT_NE(tier_->name().find("emulated"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTiers, TierContract,
                         ::testing::Values("emulated-hbm", "host", "rocksdb", "cuda-hbm",
                                           "pinned-host"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(TierRegistry, HbmFallsBackToEmulatedWithoutADevice) {
  auto t = TierRegistry::Global().Create("hbm", testing::Opts(4));
  ASSERT_TRUE(t.ok()) << t.status();
  if (!TierRegistry::Global().Probe("cuda-hbm").ok()) {
    EXPECT_EQ((*t)->name(), "emulated-hbm");
    EXPECT_TRUE((*t)->capabilities().emulated);
  } else {
    EXPECT_EQ((*t)->name(), "cuda-hbm");
  }
  auto host = TierRegistry::Global().Create("host", testing::Opts(4));
  ASSERT_TRUE(host.ok());
  EXPECT_EQ((*host)->kind(), v1::TIER_HOST);
}

TEST(TierRegistry, UnknownKindAndNameAreErrors) {
  EXPECT_TRUE(TierRegistry::Global().Create("tape", testing::Opts(4)).status().IsNotFound());
  EXPECT_TRUE(TierRegistry::Global().CreateNamed("nope", testing::Opts(4)).status().IsNotFound());
  EXPECT_TRUE(TierRegistry::Global().Create("host", TierOptions{}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace switchyard::kv_tiers
