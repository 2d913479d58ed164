#include "net_budget/link_calibrate/calibrate.h"

#include <gtest/gtest.h>

namespace switchyard::net_budget {
namespace {

TEST(ParseByteSize, AcceptsPlainNumbersAndBinaryUnits) {
  EXPECT_EQ(ParseByteSize("16384").value(), 16384u);
  EXPECT_EQ(ParseByteSize("4K").value(), 4096u);
  EXPECT_EQ(ParseByteSize("64m").value(), 64u << 20);
  EXPECT_EQ(ParseByteSize("1G").value(), 1ull << 30);
}

TEST(ParseByteSize, RejectsMalformedSizesNamingThem) {
  for (const char* bad : {"", "K", "12KB", "1.5G", "-4", "4T", "9999999999999999999"}) {
    auto r = ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos) << bad;
  }
}

TEST(SweepSizes, QuadruplesFromMinToMaxInclusive) {
  EXPECT_EQ(SweepSizes(4096, 65536), (std::vector<uint64_t>{4096, 16384, 65536}));
  EXPECT_EQ(SweepSizes(4096, 100000), (std::vector<uint64_t>{4096, 16384, 65536, 100000}));
  EXPECT_TRUE(SweepSizes(0, 10).empty());
}

}  // namespace
}  // namespace switchyard::net_budget
